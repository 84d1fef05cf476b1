"""``netbench --interference``: how much of a worker's compute an all-reduce occupies while it
runs (Tianshu §3.3; the hardware file's ``allreduce_compute_share``, ``predict
--allreduce-compute-share``).

Two gloo ranks, each pinned to one core (the worker's device; on a GPU cluster NCCL's SMs play
that part, and this measurement would use NCCL: not built, no GPU was lent). Rank 0 runs a
matmul loop standing for the backward pass:

- alone, at rate r0 (the mean of a run before and one after the next);
- while a second thread of the same rank runs all-reduces of ``size`` bytes back to back with
  rank 1 (``calls``, and at least a second of them), at rate r1, the calls in flight for a
  fraction f of that time.

A call that occupies a share s of the device while it runs leaves the loop (1 − s·f)·r0, so
s = (1 − r1/r0)/f, the simulator's virtual op of s times the call (``with_allreduce_compute``).
The calls' own slow-down under compute (the other direction of the coupling) is recorded in
``measured``, not modelled. Rank 0 prints one JSON line.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time

from ..errors import ConfigError, SgdsimError
from .procs import kill_all, last_line

DEFAULT_SIZE = 4 << 20
WINDOW_S = 1.0
MATMUL_N = 192  # one product ~0.2 ms on a CPU core: fine-grained progress


def share_from(r0: float, r1: float, busy: float) -> float:
    """s = (1 − r1/r0)/f, clipped to [0, 1): noise can make r1 exceed r0."""
    if not (r0 > 0 and r1 >= 0 and 0 < busy <= 1):
        raise ConfigError(f"interference needs positive rates and a busy fraction in (0, 1], got "
                          f"r0={r0}, r1={r1}, f={busy}")
    return min(max(0.0, (1.0 - r1 / r0) / busy), 0.99)


def summarize(rounds: list[dict]) -> dict:
    """The median share over rounds, and the raw rounds."""
    shares = [share_from(r["r0"], r["r1"], r["busy"]) for r in rounds]
    return {"allreduce_compute_share": statistics.median(shares),
            "interference_shares": shares, "interference_rounds": rounds}


def _pin(rank: int) -> None:
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[rank % len(cores)]})


def _loop(a, b, stop) -> tuple[int, float]:
    n, t0 = 0, time.perf_counter()
    while not stop():
        a @ b
        n += 1
    return n, time.perf_counter() - t0


def _rank_main(rank: int, world: int, size: int, calls: int, rounds: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    _pin(rank)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    t = torch.zeros(max(1, size // 4))
    a, b = torch.randn(MATMUL_N, MATMUL_N), torch.randn(MATMUL_N, MATMUL_N)
    dist.all_reduce(t)  # connections, buffers
    out = []
    for _ in range(rounds):
        alone = _calls(dist, t, calls)
        # at least WINDOW_S of calls beside the loop: short calls would measure the noise
        n_calls = torch.tensor([max(calls, math.ceil(WINDOW_S / statistics.median(alone)))])
        dist.broadcast(n_calls, 0)
        window = max(WINDOW_S, sum(alone))
        r0a = _alone_rate(dist, rank, a, b, window)
        n, elapsed, durations = _together(dist, rank, t, a, b, int(n_calls))
        r0b = _alone_rate(dist, rank, a, b, window)
        if rank == 0:
            out.append({"r0": (r0a + r0b) / 2, "r0_before": r0a, "r0_after": r0b,
                        "r1": n / elapsed, "busy": min(1.0, sum(durations) / elapsed),
                        "call_alone_s": statistics.median(alone),
                        "call_with_compute_s": statistics.median(durations)})
    if rank == 0:
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def _calls(dist, t, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        dist.all_reduce(t)
        times.append(time.perf_counter() - t0)
    return times


def _alone_rate(dist, rank: int, a, b, window_s: float) -> float:
    dist.barrier()
    rate = 0.0
    if rank == 0:
        end = time.perf_counter() + window_s
        n, elapsed = _loop(a, b, lambda: time.perf_counter() >= end)
        rate = n / elapsed
    dist.barrier()
    return rate


def _together(dist, rank: int, t, a, b, calls: int):
    dist.barrier()
    if rank != 0:
        _calls(dist, t, calls)
        dist.barrier()
        return 0, 1.0, []
    durations: list[float] = []
    worker = threading.Thread(target=lambda: durations.extend(_calls(dist, t, calls)))
    worker.start()
    n, elapsed = _loop(a, b, lambda: not worker.is_alive())
    worker.join()
    dist.barrier()
    return n, elapsed, durations


def run(size: int = DEFAULT_SIZE, calls: int = 10, rounds: int = 3, lab=None) -> dict:
    """Two ranks on loopback (``lab`` None) or on lab hosts 1 and 2; the ``summarize`` dict."""
    if not 1 <= calls <= 10_000 or not 1 <= rounds <= 100:
        raise ConfigError(f"interference: calls must be 1..10000 and rounds 1..100, got {calls}, {rounds}")
    env = {"MASTER_ADDR": lab.address(1) if lab else "127.0.0.1",
           "MASTER_PORT": str(random.randint(30000, 39999)), "OMP_NUM_THREADS": "1",
           **({"GLOO_SOCKET_IFNAME": "eth0"} if lab else {"GLOO_SOCKET_IFNAME": "lo"})}
    procs = []
    try:
        for r in range(2):
            argv = [sys.executable, "-m", "sgdsim.lab.interference", "--rank", str(r), "--world", "2",
                    "--size", str(size), "--calls", str(calls), "--rounds", str(rounds)]
            kw = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                      env={**os.environ, **env})
            procs.append(lab.popen(r + 1, argv, **kw) if lab else subprocess.Popen(argv, **kw))
        out, err = procs[0].communicate(timeout=600)
        if procs[0].returncode != 0:
            raise SgdsimError(f"interference benchmark failed: {last_line(err)}")
        return {"interference_size_bytes": size, **summarize(json.loads(out.strip().splitlines()[-1]))}
    finally:
        kill_all(procs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.interference")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    _rank_main(args.rank, args.world, args.size, args.calls, args.rounds)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
