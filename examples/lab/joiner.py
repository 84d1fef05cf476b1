"""Two pulls from one server, the second started δ later: does the late-comer catch up?

Async workers keep the offset they start with when concurrent flows share fairly (a pull that
starts δ after another ends δ after it; docs/simulator.md, "Async regimes"). If a flow that
joins a busy link gets more than its fair share (TCP's start-up probing), the follower catches
up and lock-step attracts; if the incumbent keeps more (FCFS-like), the two drift apart. This
measures end_B − end_A against δ on the lab: equal sharing predicts δ, FCFS T (one transfer).

Clients pull M bytes over persistent connections at shared wall-clock times (every lab host is
a namespace of one machine, one clock): round i starts client k at t0 + i·period + k·δ_i.

    sudo sgdsim lab up --hosts 3 --bandwidth 100Mbit/s
    sudo ip netns exec sgdsim-h0 .venv/bin/python examples/lab/joiner.py server &
    T0=$(python3 -c 'import time; print(time.time() + 3)')
    sudo ip netns exec sgdsim-h1 .venv/bin/python examples/lab/joiner.py client 10.77.0.1 0 $T0 > a.txt &
    sudo ip netns exec sgdsim-h2 .venv/bin/python examples/lab/joiner.py client 10.77.0.1 1 $T0 > b.txt
    .venv/bin/python examples/lab/joiner.py report a.txt b.txt     # pairs of runs pool
    .venv/bin/python examples/lab/joiner.py pool HARDWARE.json down a.txt b.txt  # with netbench --joiner's
    .venv/bin/python examples/lab/joiner.py stalls a.txt b.txt   # rounds with traffic the other way
    sudo sgdsim lab down

Other sizes and offsets: JOINER_BYTES=35000000 JOINER_PERIOD_S=7 JOINER_DELTAS_MS=0,100,200,400,700,1000
in the environment of the server and both clients (the report reads them from the files);
JOINER_DIRECTION=push: the clients send the bytes to the server (a gradient push) instead.
With traffic the other way all along (as in training, where one worker pushes while another
pulls), a fourth host runs `joiner.py reverse 10.77.0.1` (lab up --hosts 4); with
JOINER_DIRECTION=push it receives from the server all along instead.
"""
import os
import socket
import statistics
import sys
import threading
import time

import numpy as np

from sgdsim.lab.joiner import fit_join, pooled
from sgdsim.validate.regimes import late_share

M = int(os.environ.get("JOINER_BYTES", 10_000_000))
PERIOD_S = float(os.environ.get("JOINER_PERIOD_S", 3.0))
_DELTAS_MS = os.environ.get("JOINER_DELTAS_MS", "0,50,100,200,400,600")
DELTAS_S = [float(d) / 1e3 for d in _DELTAS_MS.split(",")] * 6  # interleaved: drift hits every δ alike
PUSH = os.environ.get("JOINER_DIRECTION", "pull") == "push"  # the clients send M bytes instead
WARM = 3  # rounds where the clients take turns (a lone transfer each), not reported
buf = bytearray(1 << 16)


def recv_n(c, n):
    while n > 0:
        k = c.recv_into(buf, min(n, len(buf)))
        if k == 0:
            raise EOFError
        n -= k


def serve(c):
    payload = bytes(M)
    try:
        while True:
            if PUSH:  # a push ends when the server has every byte: it acknowledges with one
                recv_n(c, M)
                c.sendall(b"a")
            else:
                recv_n(c, 1)
                c.sendall(payload)
    except (EOFError, OSError):
        pass


def sink(c):
    """Background traffic the other way: the fourth host's first byte says which way."""
    try:
        if c.recv(1) == b"r":  # it receives: the server sends without a pause (against pushes)
            block = bytes(1 << 20)
            while True:
                c.sendall(block)
        while c.recv_into(buf):
            pass
    except OSError:
        pass


USAGE = "usage: joiner.py server | reverse HOST | client HOST K T0 | report|stalls FILE_A FILE_B ... | pool HARDWARE DIRECTION FILE_A FILE_B ..."


def main():
    if len(sys.argv) < 2:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "server":
        s = socket.create_server(("0.0.0.0", 45556))
        reverse = socket.create_server(("0.0.0.0", 45557))  # background traffic the other way
        threading.Thread(target=lambda: [threading.Thread(target=sink, args=(reverse.accept()[0],),
                                                          daemon=True).start() for _ in iter(int, 1)],
                         daemon=True).start()
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()
    elif sys.argv[1] in ("reverse", "client") and len(sys.argv) != {"reverse": 3, "client": 5}[sys.argv[1]]:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    elif sys.argv[1] == "reverse":  # a fourth host sends to the server without a pause
        c = socket.create_connection((sys.argv[2], 45557))
        if PUSH:  # against pushes the traffic the other way is the server's: receive it
            c.sendall(b"r")
            sink(c)
        block = bytes(1 << 20)
        c.sendall(b"s")
        while True:
            c.sendall(block)
    elif sys.argv[1] == "client":
        try:
            host, k, t0 = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        except ValueError:
            print(f"joiner.py client: K is 0 or 1 and T0 a time in seconds, got {sys.argv[3:5]}", file=sys.stderr)
            sys.exit(2)
        c = socket.create_connection((host, 45556))
        deltas = [None] * WARM + DELTAS_S
        for i, d in enumerate(deltas):
            if d is None:  # warm-up: the clients take turns, one period each
                start = t0 + (2 * i + k) * PERIOD_S
            else:
                start = t0 + (2 * WARM + i - WARM) * PERIOD_S + k * d
            time.sleep(max(0.0, start - time.time()))
            t = time.time()
            if PUSH:
                c.sendall(bytes(M))
                recv_n(c, 1)
            else:
                c.sendall(b"p")
                recv_n(c, M)
            print(i, -1.0 if d is None else d, t, time.time(), flush=True)
    elif sys.argv[1] in ("pool", "stalls", "report"):
        analyse(sys.argv[1], sys.argv[2:])
    else:
        print(USAGE, file=sys.stderr)
        sys.exit(2)


def analyse(what: str, args: list[str]) -> None:
    """The reports over client files: a missing or unreadable file, or too few, is one line."""
    files = args[2:] if what == "pool" else args
    if len(files) < 2 or len(files) % 2:
        print(f"joiner.py {what}: give pairs of client files (A's, B's), got {len(files)}", file=sys.stderr)
        sys.exit(2)
    try:
        {"pool": lambda: pool(args[0], args[1], files), "stalls": lambda: stalls(files),
         "report": lambda: report(files)}[what]()
    except OSError as exc:
        print(f"joiner.py {what}: {exc.filename}: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
    except (ValueError, IndexError, KeyError, statistics.StatisticsError) as exc:
        print(f"joiner.py {what}: not client logs of joiner.py ({exc})", file=sys.stderr)
        sys.exit(2)


def _times(path):
    return {int(r[0]): [float(x) for x in r[1:]] for r in (line.split() for line in open(path))}


def rounds_of(paths):
    """From pairs of client files (A's, B's) of one or more runs: every reported round as
    (planned δ, A's start, A's end, B's start, B's end), and the lone transfers' median time."""
    rounds, lone = [], []
    for pa, pb in zip(paths[::2], paths[1::2]):
        a, b = _times(pa), _times(pb)
        lone += [a[i][2] - a[i][1] for i in range(WARM)]
        rounds += [(a[i][0], a[i][1], a[i][2], b[i][1], b[i][2]) for i in a if i >= WARM and i in b]
    return rounds, statistics.median(lone)


def pool(hardware, direction, paths):
    """One fit over these rounds and those ``netbench --lab --joiner`` kept in a hardware file."""
    import json

    rounds, t_lone = rounds_of(paths)
    rows = [(d, eb - ea) for d, _, ea, _, eb in rounds]
    with open(hardware, encoding="utf-8") as f:
        hub = json.load(f)["measured"]["joiner"]["rounds"][direction]
    sets = [(rows, t_lone), ([(r[0], r[1]) for r in hub["rounds"]], hub["lone_s"])]
    fit = fit_join(*pooled(sets))
    print(f"pooled {len(rows)} + {len(hub['rounds'])} rounds: join_boost {fit.boost:.2f} from "
          f"{fit.after_s:.3f} s; rms {fit.rms_gap_s * 1e3:.0f} ms (equal sharing {fit.equal_rms_gap_s * 1e3:.0f} ms)")


def stalls(paths):
    """The stall fit (sgdsim.lab.stalls) of rounds measured with traffic the other way."""
    from sgdsim.lab.stalls import NOISE_S, fit_stalls, measured_idle_s

    rounds, t_lone = rounds_of(paths)
    rows = [(sb - sa, ea - sa, eb - sa) for _, sa, ea, sb, eb in rounds]
    idle = measured_idle_s(t_lone, rows)
    fit = fit_stalls(rows, t_lone)
    print(f"lone transfer T = {t_lone * 1e3:.0f} ms; {len(rows)} rounds, {fit.stalled_rounds} with the "
          f"link idle over {NOISE_S * 1e3:.0f} ms (idle: median {np.median(idle) * 1e3:.0f} ms, "
          f"90th percentile {np.quantile(idle, 0.9) * 1e3:.0f} ms, max {idle.max() * 1e3:.0f} ms)")
    print(f"stall_prob {fit.prob:.2f}, stall_mean_s {fit.mean_s:.2f} "
          f"(Cramér-von Mises distance {fit.distance:.4f})")


def report(paths):
    """Pooled over pairs of client files (A's, B's) of one or more runs."""
    rounds, t_lone = rounds_of(paths)
    by_delta = {}
    for r in rounds:
        by_delta.setdefault(r[0], []).append(r[1:])
    print(f"lone transfer T = {t_lone * 1e3:.0f} ms; equal sharing predicts "
          "end_B - end_A = δ, FCFS predicts T")
    print("| δ (ms) | rounds where the late pull ended less than δ behind | end_B − end_A (ms), "
          "median [min, max] | the late pull's time (ms), median | the late pull's share φ, median |")
    print("|---:|---:|---:|---:|---:|")
    for d in sorted(by_delta):
        gaps = [(eb - ea) * 1e3 for _, ea, _, eb in by_delta[d]]
        closer = f"{sum(g < d * 1e3 for g in gaps)} of {len(gaps)}" if d > 0 else "-"
        # the measured start of each pull, not the planned one: the clients wake a little late
        phis = [late_share(t_lone, sb - sa, ea - sa, eb - sa) for sa, ea, sb, eb in by_delta[d]]
        late = [(eb - sb) * 1e3 for _, _, sb, eb in by_delta[d]]
        print(f"| {d * 1e3:.0f} | {closer} | {statistics.median(gaps):.0f} [{min(gaps):.0f}, "
              f"{max(gaps):.0f}] | {statistics.median(late):.0f} | {statistics.median(phis):.2f} |")
    fit = fit_join([(d, eb - ea) for d, _, ea, _, eb in rounds], t_lone)
    print(f"fit (sgdsim.lab.joiner.fit_join): join_boost {fit.boost:.2f} once the incumbent has run "
          f"join_after_s {fit.after_s:.3f}; rms error of end_B - end_A {fit.rms_gap_s * 1e3:.0f} ms "
          f"(equal sharing: {fit.equal_rms_gap_s * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
