"""Two-way traffic on one NIC: how much a direction loses to flows in the other direction.

In async PS training some workers pull parameters while others push gradients, so the PS NIC
carries bulk data both ways at once. On the lab's token buckets a direction with n flows next
to m > n flows the other way gets visibly less than its link: 1 flow against 4 carried 47 Mbit/s
of 100 (docs/validation/async/two-way.md). Its ACKs wait behind the other direction's queued
data, so its windows drain (Zhang, Shenker & Clark, SIGCOMM 1991). This module measures
the share each direction keeps, for every split of up to 8 flows: the PS host streams to n
peers while m others stream to it; the goodput of each direction comes from the token-bucket
counters of the PS's two NIC directions. The table goes into the hardware file, with k of
the one-number rule max(0.05, 1 − k·(m − n)) fitted to its unbalanced cases
(``analytic/two_way.py``). Balanced loads lose too once a NIC carries ~8 flows.

Roles: ``python -m sgdsim.lab.twoway hub OUT IN SECONDS`` on lab host 0 and
``... peer HOST PORT`` on the others.
"""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time

from ..errors import ConfigError, SgdsimError
from .netns import run_cmd
from .procs import kill_all, start_hub

MAX_FLOWS = 8  # flows on the PS's NIC in all: W = 8 workers keep at most 8 transfers there
RUN_S, SETTLE_S = 7.0, 2.0  # per case; the first SETTLE_S are not counted (TCP ramps up)
_CHUNK = 1 << 16
_READY = "twoway hub on port"


def fit_penalty(cases: list[dict]) -> float:
    """k of f = 1 − k·(m − n) by least squares through f(n, n) = 1.

    ``cases``: dicts with ``n`` (minority flows), ``m`` (majority flows) and ``factor`` (the
    minority direction's goodput over the majority's). Factors at the floor say nothing about
    the slope and are left out.
    """
    pts = [(c["m"] - c["n"], 1.0 - c["factor"]) for c in cases
           if c["m"] > c["n"] > 0 and c["factor"] > 0.1]
    if not pts:
        raise SgdsimError("two-way: no case with more flows one way than the other completed")
    k = sum(d * y for d, y in pts) / sum(d * d for d, _ in pts)
    return min(0.99, max(0.0, k))


def cases_for(peers: int) -> list[tuple[int, int]]:
    """(flows out of the PS, flows into it): every split of up to ``MAX_FLOWS`` flows that fits
    on ``peers`` hosts (one flow per peer)."""
    most = min(peers, MAX_FLOWS)
    return [(o, i) for o in range(most + 1) for i in range(most + 1 - o) if o + i > 0]


def table_from_cases(rows: list[dict]) -> list:
    """``two_way_table[d][n][m]``: each direction's goodput with n flows against m the other
    way, over its goodput with one flow alone (d = 0 out of the PS's host, 1 into it), means
    over repeated cases; None where not measured. The counters include the ACKs of the other
    direction's flows (about 1.5 % of its goodput)."""
    side = 1 + max(max(r["flows_out"], r["flows_in"]) for r in rows)
    table = [[[None] * side for _ in range(side)] for _ in range(2)]
    alone = _means(rows)
    if (1, 0) not in alone or (0, 1) not in alone:
        raise SgdsimError("two-way: the cases of one flow alone each way did not complete")
    ref = (alone[(1, 0)]["out_bps"], alone[(0, 1)]["in_bps"])
    for r in alone.values():
        for d, (n, m, bps) in enumerate(((r["flows_out"], r["flows_in"], r["out_bps"]),
                                         (r["flows_in"], r["flows_out"], r["in_bps"]))):
            if n > 0 and ref[d] > 0:
                table[d][n][m] = bps / ref[d]
    return table


def _means(rows: list[dict]) -> dict:
    """Per case (flows out, flows in): its rounds' mean goodput each way."""
    out: dict = {}
    for r in rows:
        out.setdefault((r["flows_out"], r["flows_in"]), []).append(r)
    return {k: {**rs[0], "out_bps": sum(r["out_bps"] for r in rs) / len(rs),
                "in_bps": sum(r["in_bps"] for r in rs) / len(rs)} for k, rs in out.items()}


# ----------------------------------------------------------------------------- the two roles

def hub(n_out: int, n_in: int, seconds: float, announce=print) -> None:
    srv = socket.create_server(("0.0.0.0", 0))
    announce(f"{_READY} {srv.getsockname()[1]}", flush=True)
    with srv:
        srv.settimeout(60)
        conns = [srv.accept()[0] for _ in range(n_out + n_in)]
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=_send, args=(c, stop)) for c in conns[:n_out]]
    threads += [threading.Thread(target=_receive, args=(c, stop)) for c in conns[n_out:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _send(c: socket.socket, stop: float) -> None:
    payload = memoryview(bytes(_CHUNK))
    with c:
        c.sendall(b"r")  # the peer receives
        while time.monotonic() < stop:
            c.sendall(payload)


def _receive(c: socket.socket, stop: float) -> None:
    buf = bytearray(_CHUNK)
    with c:
        c.sendall(b"s")  # the peer sends
        while time.monotonic() < stop and c.recv_into(buf):
            pass


def peer(host: str, port: int) -> None:
    buf, payload = bytearray(_CHUNK), bytes(_CHUNK)
    with socket.create_connection((host, port), timeout=60) as c:
        role = c.recv(1)
        try:
            if role == b"r":
                while c.recv_into(buf):
                    pass
            else:
                while True:
                    c.sendall(payload)
        except OSError:
            pass  # the hub closed: the case is over


# ----------------------------------------------------------------------------- in the lab

def run_lab(lab=None, progress=None, run_s: float = RUN_S, settle_s: float = SETTLE_S,
            rounds: int = 1) -> dict:
    """Every case of ``cases_for`` on a running lab, ``rounds`` times over: the table (of the
    rounds' mean goodputs), the fitted penalty, the cases. Each case streams for ``run_s`` and
    counts bytes from ``settle_s`` to ``run_s`` − 1."""
    from .cluster import LabCluster

    lab = lab or LabCluster.attach()
    if rounds < 1:
        raise ConfigError(f"--two-way-rounds must be at least 1, got {rounds}")
    todo = cases_for(lab.hosts - 1) * rounds  # round after round: a drift hits every case
    if not todo:
        raise ConfigError(f"--two-way needs a lab of at least 3 hosts, this one has {lab.hosts}")
    rows = []
    for i, (n_out, n_in) in enumerate(todo):
        if progress:
            progress(f"two-way {i + 1}/{len(todo)}: {n_out} flows out of host 0, {n_in} into it")
        out_bps, in_bps = _one_case(lab, n_out, n_in, run_s, settle_s)
        # the minority: fewer flows, or at equal counts the slower direction
        (n, minority), (m, majority) = sorted([(n_out, out_bps), (n_in, in_bps)])
        rows.append({"flows_out": n_out, "flows_in": n_in, "out_bps": out_bps, "in_bps": in_bps,
                     "n": n, "m": m, "factor": minority / majority if majority > 0 else 0.0})
    return {"two_way_penalty": fit_penalty(rows), "two_way_table": table_from_cases(rows),
            "two_way_cases": rows}


def _one_case(lab, n_out: int, n_in: int, run_s: float, settle_s: float) -> tuple[float, float]:
    me = [sys.executable, "-m", "sgdsim.lab.twoway"]
    hub_p, port = start_hub(lab, me + ["hub", str(n_out), str(n_in), repr(run_s)], _READY, "two-way")
    procs = [hub_p]
    try:
        for i in range(1, n_out + n_in + 1):
            procs.append(lab.popen(i, me + ["peer", lab.address(0), port],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(settle_s)
        before, t0 = _counters(lab), time.monotonic()
        time.sleep(max(0.5, run_s - settle_s - 1.0))
        after, t1 = _counters(lab), time.monotonic()
        hub_p.wait(timeout=run_s + 60)
        return tuple(8.0 * (a - b) / (t1 - t0) for a, b in zip(after, before))  # type: ignore
    finally:
        kill_all(procs)


def _counters(lab) -> tuple[int, int]:
    """Bytes host 0 has sent (its eth0 bucket) and received (its switch port's bucket)."""
    return (_sent(lab.namespace(0), "eth0"), _sent(lab.switch, "p0"))


def _sent(ns: str, dev: str) -> int:
    try:
        out = run_cmd(["tc", "-s", "-n", ns, "qdisc", "show", "dev", dev])
    except SgdsimError as exc:  # the namespaces went away mid-measurement (lab down, a reboot)
        raise SgdsimError(f"the lab is gone ({exc}): bring it back as root with sgdsim lab up "
                          "--hosts N --bandwidth B, then run this again") from None
    m = re.search(r"Sent (\d+) bytes", out)
    if not m:
        raise SgdsimError(f"two-way: no byte counter on {ns}/{dev}")
    return int(m.group(1))


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["hub"]:
            hub(int(args[1]), int(args[2]), float(args[3]))
        else:
            peer(args[1], int(args[2]))
        return 0
    except (OSError, IndexError, ValueError) as exc:
        print(f"sgdsim: error: two-way {args[:1]}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
