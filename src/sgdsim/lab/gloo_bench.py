"""``netbench --gloo``: the same network through torch.distributed (gloo), as training sees it.

Two measurements between lab hosts 1..N (host 0 stays free, as the PS's would be):

- point-to-point ``send``/``recv`` of each message size between ranks 0 and 1 (the time until
  rank 0 hears a one-element reply), fitted with α·size + β like the TCP benchmark;
- ``all_reduce`` of each size over all N ranks, fitted as time = α·w + β where
  w = 2(N − 1)/N · size is what the ring all-reduce puts on every NIC (TPDS Eq. 11). 8/α is
  the bandwidth at which Eq. 11 reproduces gloo's collective: below the link's rate by gloo's
  chunking and synchronisation between ring steps and by the acknowledgements sharing each
  fully loaded NIC. ``predict --hardware`` uses it for ``--arch allreduce``.

A third, ``ring_latency_lab``, runs small all-reduces on 2, 4, ... N ranks and fits the fixed
cost α of one ring step: a call of S bytes on n ranks takes 2(n − 1)·(α + S/(n·B)) with B the
all-reduce bandwidth (Thakur, Rabenseifner & Gropp, "Optimization of collective communication
operations in MPICH", 2005). On the lab, 8 ranks share 2 cores, so α grows with n there (every
step waits for a process to be scheduled); one α fitted over all n is what ``predict`` uses.

Rank 0 prints one JSON line: ``{"p2p": [[size, median_s], ...], "allreduce": [...]}``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import time

from ..errors import ConfigError, SgdsimError
from .procs import kill_all, last_line
from ..hardware import fit_overhead

DEFAULT_SIZES = (1 << 20, 4 << 20, 16 << 20)
RING_SIZES = (4 << 10, 64 << 10, 1 << 20)  # small enough that the per-step cost shows


def wire_bytes(size: int, ranks: int) -> float:
    return 2.0 * (ranks - 1) / ranks * size


def summarize(raw: dict, ranks: int) -> dict:
    """Fits of the medians: bandwidths in bits/s, β in seconds."""
    out = {"gloo_ranks": ranks, "gloo_raw": raw}
    if raw.get("p2p"):
        f = fit_overhead([s for s, _ in raw["p2p"]], [t for _, t in raw["p2p"]])
        out.update(gloo_p2p_bandwidth_bps=f.bandwidth_bps, gloo_p2p_beta_s=f.beta_s)
    f = fit_overhead([wire_bytes(s, ranks) for s, _ in raw["allreduce"]],
                     [t for _, t in raw["allreduce"]])
    out.update(allreduce_bandwidth_bps=f.bandwidth_bps, allreduce_beta_s=f.beta_s)
    return out


def rank_counts(ranks: int) -> list[int]:
    """2, 4, 8, ... up to ``ranks``, and ``ranks`` itself."""
    return sorted({1 << k for k in range(1, ranks.bit_length()) if 1 << k <= ranks} | {ranks})


def fit_ring_latency(points, bandwidth_bps: float) -> float:
    """α from (ranks, size, seconds) points of single all-reduce calls, B fixed: least squares
    of t − 2(n−1)/n·S·8/B = 2(n−1)·α through the origin, weights 1/t (relative errors, as
    ``fit_overhead``). Never negative."""
    num = den = 0.0
    for n, size, t in points:
        if not t > 0 or n < 2:
            raise ConfigError(f"ring latency fit needs positive times on >= 2 ranks, got {(n, size, t)}")
        x = 2.0 * (n - 1)
        y = t - x / n * size * 8.0 / bandwidth_bps
        num += x * y / t
        den += x * x / t
    if den == 0:
        raise ConfigError("ring latency fit needs at least one point")
    return max(0.0, num / den)


def ring_latency_lab(ranks: int, bandwidth_bps: float, lab=None, progress=None) -> dict:
    """Small all-reduces on every rank count of ``rank_counts(ranks)``: the fitted α and the
    medians ``[[ranks, size, seconds], ...]``."""
    points = []
    for n in rank_counts(ranks):
        if progress:
            progress(f"gloo: ring latency on {n} ranks ...")
        raw = raw_lab(n, sizes=RING_SIZES, repeats=5, lab=lab)["allreduce"]
        points += [[n, size, t] for size, t in raw]
    return {"ring_latency_s": fit_ring_latency(points, bandwidth_bps), "ring_latency_points": points}


def _rank_main(rank: int, world: int, sizes, repeats: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    raw = {"p2p": [], "allreduce": []}
    for size in sizes:
        t = torch.zeros(max(1, size // 4))
        raw["p2p"].append([size, _p2p(dist, t, rank, repeats)])
        raw["allreduce"].append([size, _timed(dist, lambda: dist.all_reduce(t), repeats)])
    if rank == 0:
        print(json.dumps(raw), flush=True)
    dist.destroy_process_group()


def _timed(dist, fn, repeats: int) -> float:
    fn()  # warm-up: connections, buffers
    times = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.monotonic()
        fn()
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def _p2p(dist, t, rank: int, repeats: int) -> float:
    def one():
        if rank == 0:
            dist.send(t, 1)
            dist.recv(t[:1], 1)
        elif rank == 1:
            dist.recv(t, 0)
            dist.send(t[:1], 0)

    return _timed(dist, one, repeats)


def run_lab(ranks: int, sizes=DEFAULT_SIZES, repeats: int = 3, lab=None) -> dict:
    """Ranks on lab hosts 1..ranks; the ``summarize`` dict."""
    return summarize(raw_lab(ranks, sizes, repeats, lab), ranks)


def raw_lab(ranks: int, sizes=DEFAULT_SIZES, repeats: int = 3, lab=None) -> dict:
    """Ranks on lab hosts 1..ranks; rank 0's medians ``{"p2p": [...], "allreduce": [...]}``."""
    from .cluster import LabCluster

    lab = lab or LabCluster.attach()
    if not 2 <= ranks <= lab.hosts - 1:
        raise ConfigError(f"--gloo needs 2..{lab.hosts - 1} ranks in a {lab.hosts}-host lab, got {ranks}")
    env = {"MASTER_ADDR": lab.address(1), "MASTER_PORT": str(random.randint(30000, 39999)),
           "GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1"}
    procs = []
    try:
        for r in range(ranks):
            argv = [sys.executable, "-m", "sgdsim.lab.gloo_bench", "--rank", str(r), "--world",
                    str(ranks), "--sizes", ",".join(map(str, sizes)), "--repeats", str(repeats)]
            procs.append(lab.popen(r + 1, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env={**os.environ, **env}))
        out, err = procs[0].communicate(timeout=300)
        if procs[0].returncode != 0:
            raise SgdsimError(f"gloo benchmark failed: {last_line(err)}")
        return json.loads(out.strip().splitlines()[-1])
    finally:
        kill_all(procs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.gloo_bench")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    _rank_main(args.rank, args.world, [int(s) for s in args.sizes.split(",")], args.repeats)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
