"""How TCP shares one NIC among concurrent transfers: the weight of FCFS in hybrid sharing.

The papers model a shared PS NIC as processor sharing (every flow gets B/n), FCFS (one flow at
a time) or, for synchronous SGD, "hybrid": the mean of the two (TPDS §3.1.1). Real TCP sits in
between, and where depends on the network: on the lab's token buckets, flows that start
together after an idle period (slow start restarts after idle) finish at visibly different
times. This module measures that with the traffic pattern of synchronous SGD: one host sends
``size`` bytes to each of n peers at once (a downlink round), then all n peers send ``size``
bytes to it at once (an uplink round), with ``idle_s`` of silence after every round, over
persistent connections.

From one round with completion times c_1..c_n (seconds from its start), the link moved n·size
bytes in max(c) (it is work-conserving), so one transfer alone takes T = max(c)/n. Processor
sharing makes every c_i = n·T; FCFS makes them T, 2T, .., n·T with mean (n+1)·T/2. The FCFS
weight w solves mean(c) = (1 − w)·n·T + w·(n+1)·T/2, clipped to [0, 1]; the result is the
mean over rounds. ``predict`` uses it as hybrid = (1 − w)·PS + w·FCFS (the papers: w = 0.5).

The same rounds give the spread of the shares, which the simulator's PS sharing can draw per
flow (``--share-cv``): with weights w_i the link stays full, so the first transfer ends at
mean(w)/max(w) of the last one. ``share_cv`` finds the coefficient of variation of lognormal
weights whose expected mean/max matches the rounds' mean of min(c)/max(c).

Roles: ``python -m sgdsim.lab.fairness hub --peers N ...`` (the PS's host; prints one JSON
line with the per-round completion times) and ``... peer --host H --port P ...``.
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time

import numpy as np

from ..sim.stats import lognormal_factors
from ..errors import ConfigError, SgdsimError
from .procs import hub_and_peers

_READY = "fairness hub listening on"
_GO, _ACK = b"G", b"A"
_CHUNK = 1 << 20
IO_TIMEOUT_S = 120.0


def fcfs_weight(completions_s: list[float]) -> float:
    """The FCFS weight of one round (module docstring); 0 for a single transfer."""
    n = len(completions_s)
    if n < 2 or not max(completions_s) > 0:
        return 0.0
    total = max(completions_s)
    fair, fcfs = total, (n + 1) / (2 * n) * total
    w = (fair - statistics.fmean(completions_s)) / (fair - fcfs)
    return min(1.0, max(0.0, w))


def first_last_ratio(cv: float, n: int, rng: np.random.Generator, draws: int = 20000) -> float:
    """E[mean(w)/max(w)] for n lognormal weights of mean 1 and CV ``cv`` (Monte Carlo)."""
    if cv <= 0:
        return 1.0
    w = lognormal_factors(rng, cv, (draws, n))
    return float(np.mean(w.mean(axis=1) / w.max(axis=1)))


def share_cv(rounds: list[dict], seed: int = 0) -> float:
    """CV of per-flow weights that reproduces the rounds' first/last completion ratio."""
    ratios = [min(r["completions_s"]) / max(r["completions_s"]) for r in rounds
              if len(r["completions_s"]) > 1 and max(r["completions_s"]) > 0]
    if not ratios:
        return 0.0
    target, n = statistics.fmean(ratios), max(len(r["completions_s"]) for r in rounds)
    lo, hi = 0.0, 3.0
    if first_last_ratio(hi, n, np.random.default_rng(seed)) >= target:
        return hi
    for _ in range(40):  # the ratio falls as the CV grows: bisection, common random numbers
        mid = (lo + hi) / 2
        if first_last_ratio(mid, n, np.random.default_rng(seed)) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def summarize(rounds: list[dict]) -> dict:
    """Mean FCFS weight over rounds, per direction and overall."""
    if not rounds:
        raise SgdsimError("fairness: no round completed")
    by = {d: [fcfs_weight(r["completions_s"]) for r in rounds if r["direction"] == d]
          for d in ("down", "up")}
    every = by["down"] + by["up"]
    return {"fcfs_weight": statistics.fmean(every),
            "fcfs_weight_down": statistics.fmean(by["down"]) if by["down"] else None,
            "fcfs_weight_up": statistics.fmean(by["up"]) if by["up"] else None,
            "share_cv": share_cv(rounds), "rounds": rounds}


# ----------------------------------------------------------------------------- the two roles

def hub(peers: int, size: int, rounds: int, idle_s: float, port: int = 0, announce=print) -> list[dict]:
    srv = socket.create_server(("0.0.0.0", port))
    announce(f"{_READY} {srv.getsockname()[1]}", flush=True)
    conns = []
    with srv:
        srv.settimeout(IO_TIMEOUT_S)
        while len(conns) < peers:
            conn, _ = srv.accept()
            conn.settimeout(IO_TIMEOUT_S)
            conns.append(conn)
    payload = payload_of(size)
    out = []
    try:
        for r in range(rounds):
            for direction in ("down", "up"):
                out.append({"direction": direction,
                            "completions_s": _round(conns, direction, size, payload)})
                time.sleep(idle_s)
    finally:
        for c in conns:
            c.close()
    return out


def _round(conns, direction: str, size: int, payload) -> list[float]:
    return [end for _, end in transfers(conns, [0.0] * len(conns), direction, size, payload)]


def transfers(conns, offsets_s, direction: str, size: int, payload) -> list[tuple[float, float]]:
    """Each connection moves ``size`` bytes ("down": to its peer, "up": from it), the i-th
    starting ``offsets_s[i]`` after the first: [(start, end)], seconds from the first start."""
    times = [(0.0, 0.0)] * len(conns)
    t0 = time.monotonic()

    def one(i: int) -> None:
        time.sleep(max(0.0, t0 + offsets_s[i] - time.monotonic()))
        start, c = time.monotonic() - t0, conns[i]
        if direction == "down":
            c.sendall(_GO + b"d")
            _send(c, size, payload)
            _expect(c, _ACK)
        else:
            c.sendall(_GO + b"u")
            _drain(c, size)
        times[i] = (start, time.monotonic() - t0)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def payload_of(size: int) -> memoryview:
    """The bytes a hub sends, reused chunk by chunk."""
    return memoryview(bytes(min(size, _CHUNK)))


def peer(host: str, port: int, size: int) -> None:
    c = socket.create_connection((host, port), timeout=IO_TIMEOUT_S)
    payload = payload_of(size)
    with c:
        while True:
            cmd = c.recv(2)
            if len(cmd) < 2:
                return  # the hub closed: all rounds done
            if cmd == _GO + b"d":
                _drain(c, size)
                c.sendall(_ACK)
            else:
                _send(c, size, payload)


def _send(c: socket.socket, size: int, payload) -> None:
    left = size
    while left:
        n = min(left, len(payload))
        c.sendall(payload[:n])
        left -= n


def _drain(c: socket.socket, size: int) -> None:
    buf = bytearray(_CHUNK)
    left = size
    while left:
        n = c.recv_into(buf, min(left, _CHUNK))
        if not n:
            raise ConnectionError("peer closed mid-transfer")
        left -= n


def _expect(c: socket.socket, what: bytes) -> None:
    if c.recv(1) != what:
        raise ConnectionError("peer closed before acknowledging")


# ----------------------------------------------------------------------------- in the lab

def run_lab(peers: int, size: int, rounds: int = 6, idle_s: float = 1.0, lab=None) -> dict:
    """Hub on lab host 0, peers on hosts 1..peers; the ``summarize`` dict."""
    from .cluster import LabCluster

    lab = lab or LabCluster.attach()
    if peers < 2 or peers + 1 > lab.hosts:
        raise ConfigError(f"--fanout needs 2..{lab.hosts - 1} peers in a {lab.hosts}-host lab, "
                          f"got {peers}")
    me = [sys.executable, "-m", "sgdsim.lab.fairness"]
    out = hub_and_peers(lab, me + ["hub", "--peers", str(peers), "--size", str(size), "--rounds",
                                   str(rounds), "--idle", repr(idle_s)], _READY, "fairness",
                        lambda port: peer_argv(lab, port, size), peers, rounds * 2 * (idle_s + 60))
    return summarize(json.loads(out))


def peer_argv(lab, port: str, size: int) -> list[str]:
    """A peer of host 0's hub (this module's and ``lab.joiner``'s)."""
    return [sys.executable, "-m", "sgdsim.lab.fairness", "peer", "--host", lab.address(0),
            "--port", port, "--size", str(size)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.fairness")
    sub = ap.add_subparsers(dest="role", required=True)
    h = sub.add_parser("hub")
    h.add_argument("--peers", type=int, required=True)
    h.add_argument("--rounds", type=int, default=6)
    h.add_argument("--idle", type=float, default=1.0)
    h.add_argument("--port", type=int, default=0)
    p = sub.add_parser("peer")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    for q in (h, p):
        q.add_argument("--size", type=int, required=True)
    args = ap.parse_args(argv)
    try:
        if args.role == "hub":
            print(json.dumps(hub(args.peers, args.size, args.rounds, args.idle, args.port)))
        else:
            peer(args.host, args.port, args.size)
        return 0
    except OSError as exc:
        print(f"sgdsim: error: fairness {args.role}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
