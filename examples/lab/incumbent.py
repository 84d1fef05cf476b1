"""Does a transfer stall when one starts the other way? The incumbent's side of finding 6.

``joiner.py reverse`` measured transfers that start against traffic already flowing the other
way. In training the other way is a transfer too, and it starts and stops: one worker's push
starts while another's pull runs. Here host 1 runs one long transfer (the incumbent), logging
its progress, while host 2 starts a transfer the other way every PERIOD seconds (the
arrivals). A stall is a gap in the incumbent's progress, or an arrival that takes longer than
its bytes need.

    sudo sgdsim lab up --hosts 3 --bandwidth 100Mbit/s
    sudo ip netns exec sgdsim-h0 .venv/bin/python examples/lab/incumbent.py server &
    T0=$(python3 -c 'import time; print(time.time() + 3)')
    sudo ip netns exec sgdsim-h1 .venv/bin/python examples/lab/incumbent.py long 10.77.0.1 pull 800MB $T0 > inc.txt &
    sudo ip netns exec sgdsim-h2 .venv/bin/python examples/lab/incumbent.py arrivals 10.77.0.1 push 10MB 2.5 24 $T0 > arr.txt
    .venv/bin/python examples/lab/incumbent.py report inc.txt arr.txt
    .venv/bin/python examples/lab/incumbent.py record HARDWARE.json pull inc.txt arr.txt  # its fields

Run it with a pull incumbent and pushes arriving, and with a push incumbent and pulls
arriving (``long ... push``, ``arrivals ... pull``): each run records half of the eight
``stall_*`` fields.

With arrivals the same way as the incumbent it measures when the late-comer's advantage sets
in (finding 8): ``ramp`` reads such runs, ``rounds`` runs a short incumbent per round over one
connection instead of one long one (start the arrivals a little after T0; ``ramp-rounds``
reads it), and ``record-onset HARDWARE.json pull|push WINDOW_S SETTLED_S ramp INC ARR ...
rounds INC ARR ...`` writes the pooled fit (``sgdsim.lab.onset``). For pushes the incumbent
is ``logged-push``: the server logs its progress where the bytes arrive (redirect the
server's output to the incumbent file).

``alternate HOST pull|push SIZE N T0 [PAUSE]`` is a worker without compute: N
transfers back to back, alternating directions; two hosts starting with opposite ones run a
pull and a push at once (finding 10). With ``sleep:S`` it waits S between a pull and its push
with idle cores, with ``burn:S`` it keeps a core busy for S (a fixed time), with ``work:S``
it does a fixed amount of CPU work that takes S alone (contention stretches it), and with
``step:MODEL:BATCH`` it runs one real forward and backward (finding 13; ``pauses.py``).
``examples/lab/trace_dynamics.py rounds`` and ``alternation`` read these runs.

With arrivals the other way a little after each round's start (``rounds`` and ``arrivals``
at T0 + 0.15 s), ``joined HARDWARE.json pull|push SPAN_S INC ARR ...`` prints the
incumbent's share after each arrival starts and the step fitted to it (``sgdsim.lab.joined``,
finding 9), and the step of each arrival alone; ``record-joined`` writes them
(``two_way_joined*``: the model draws one of the latter per join). SPAN_S: the arrival's time.
"""
import socket
import struct
import sys
import threading
import time

import numpy as np

from sgdsim.errors import ConfigError
from sgdsim.lab.onset import joiner_shares, onset_delay
from sgdsim.lab.stalls import fit_waits
from sgdsim.units import parse_size_bytes
from pauses import pause_of

PORT = 45558
RECORD_BYTES = 1 << 18  # the incumbent logs its progress every 256 KiB
GAP_S = 0.15  # a progress gap longer than this is a stall (records come every ~21 ms at 100 Mbit/s)
buf = bytearray(1 << 16)


def recv_n(c, n, every=0, log=None):
    done = mark = 0
    while done < n:
        k = c.recv_into(buf, min(n - done, len(buf)))
        if k == 0:
            raise EOFError
        done += k
        if every and done - mark >= every:
            mark = done
            log(done)


def send_n(c, n, every=0, log=None):
    block, done = bytes(1 << 16), 0
    while done < n:
        k = c.send(memoryview(block)[:min(len(block), n - done)])
        done += k
        if every and done // every != (done - k) // every:
            log(done)


def serve(c):
    try:
        while True:
            head = c.recv(9, socket.MSG_WAITALL)
            if len(head) < 9:
                return
            kind, n = head[:1], struct.unpack("!Q", head[1:])[0]
            if kind == b"p":  # the client pulls n bytes
                send_n(c, n)
            elif kind == b"L":  # a push, its progress logged where the bytes arrive
                start, out = time.time(), []
                recv_n(c, n, RECORD_BYTES, lambda done: out.append((time.time(), done)))
                c.sendall(b"a")
                print(f"start {start}\n" + "\n".join(f"{t} {b}" for t, b in out), flush=True)
            else:  # the client pushes n bytes, acknowledged with one
                recv_n(c, n)
                c.sendall(b"a")
    except OSError:
        pass


def transfer(c, kind, n, every=0, log=None):
    c.sendall({"pull": b"p", "push": b"u", "logged-push": b"L"}[kind] + struct.pack("!Q", n))
    if kind == "pull":
        recv_n(c, n, every, log)
    else:
        send_n(c, n, every, log)
        recv_n(c, 1)


ROLES = {  # role: (arguments it needs at least, what they are)
    "server": (0, ""), "long": (4, "HOST pull|push SIZE T0"), "rounds": (6, "HOST pull|push SIZE PERIOD N T0"),
    "arrivals": (6, "HOST pull|push SIZE PERIOD N T0"), "alternate": (5, "HOST FIRST SIZE N T0 [PAUSE]"),
    "report": (2, "incumbent.txt arrivals.txt"), "ramp": (2, "incumbent.txt arrivals.txt [...]"),
    "ramp-rounds": (2, "incumbent.txt arrivals.txt [...]"),
    "record-onset": (7, "HARDWARE.json pull|push WINDOW_S SETTLED_S ramp|rounds INC ARR [...]"),
    "joined": (5, "HARDWARE.json pull|push SPAN_S INC ARR [...]"),
    "record-joined": (5, "HARDWARE.json pull|push SPAN_S INC ARR [...]"),
    "record": (4, "HARDWARE.json INCUMBENT_KIND incumbent.txt arrivals.txt"),
}


def main():
    role = sys.argv[1] if len(sys.argv) > 1 else None
    if role not in ROLES:
        _die("usage: incumbent.py " + " | ".join(ROLES) + " ... (the module's docstring shows each)")
    if len(sys.argv) - 2 < ROLES[role][0]:
        _die(f"usage: incumbent.py {role} {ROLES[role][1]}")
    try:
        _run(role)
    except (ConfigError, ValueError, OSError) as e:  # a file not there, a size or time not a number
        _die(f"{role}: {e}")


def _run(role: str):
    if role == "server":
        s = socket.create_server(("0.0.0.0", PORT))
        while True:
            threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
    elif role == "long":  # HOST KIND SIZE T0: one transfer, a line per 256 KiB
        host, kind, n, t0 = sys.argv[2], sys.argv[3], int(parse_size_bytes(sys.argv[4])), float(sys.argv[5])
        c = socket.create_connection((host, PORT))
        time.sleep(max(0.0, t0 - time.time()))
        print(f"start {time.time()}", flush=True)
        out = []
        transfer(c, kind, n, RECORD_BYTES, lambda done: out.append((time.time(), done)))
        print("\n".join(f"{t} {b}" for t, b in out), flush=True)
    elif role == "rounds":  # HOST KIND SIZE PERIOD N T0: an incumbent per round, logged
        host, kind, n = sys.argv[2], sys.argv[3], int(parse_size_bytes(sys.argv[4]))
        period, count, t0 = float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
        c = socket.create_connection((host, PORT))
        for i in range(count):  # one connection all along, as a worker's
            time.sleep(max(0.0, t0 + i * period - time.time()))
            out = [(time.time(), 0)]
            transfer(c, kind, n, RECORD_BYTES, lambda done: out.append((time.time(), done)))
            if kind == "pull":  # a logged push's progress is printed by the server
                print(f"start {out[0][0]}\n" + "\n".join(f"{t} {b}" for t, b in out[1:]), flush=True)
    elif role == "ramp-rounds":  # incumbent.txt arrivals.txt [...]: one incumbent per round
        ramp(_pairs(sys.argv[2:]), round_shares, windows=(0.4, 0.5, 0.6))
    elif role == "arrivals":  # HOST KIND SIZE PERIOD N T0: transfers the other way
        host, kind, n = sys.argv[2], sys.argv[3], int(parse_size_bytes(sys.argv[4]))
        period, count, t0 = float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
        c = socket.create_connection((host, PORT))
        for i in range(-2, count):  # two lone transfers first, before the incumbent starts
            time.sleep(max(0.0, t0 + i * period + (0 if i >= 0 else -0.5 * period) - time.time()))
            t = time.time()
            transfer(c, kind, n)
            print(i, t, time.time(), flush=True)
    elif role == "alternate":  # HOST FIRST SIZE N T0 [PAUSE]: pull and push, N in all
        host, first, n = sys.argv[2], sys.argv[3], int(parse_size_bytes(sys.argv[4]))
        count, t0 = int(sys.argv[5]), float(sys.argv[6])
        try:
            pause = pause_of(sys.argv[7] if len(sys.argv) > 7 else "sleep:0")
        except ConfigError as e:
            _die(f"alternate: {e}")
        c = socket.create_connection((host, PORT))
        time.sleep(max(0.0, t0 - time.time()))
        for i in range(count):  # a worker without compute: its transfers alternate directions
            kind, t = (first, "push" if first == "pull" else "pull")[i % 2], time.time()
            transfer(c, kind, n)
            print(kind, t, time.time(), flush=True)
            if kind == "pull":
                pause()
    elif role == "report":
        report(sys.argv[2], sys.argv[3])
    elif role == "ramp":  # incumbent.txt arrivals.txt [...]: arrivals the same way
        ramp(_pairs(sys.argv[2:]))
    elif role == "record-onset":  # HARDWARE.json pull|push WINDOW_S SETTLED_S ramp|rounds INC ARR [...] ...
        if len(sys.argv) < 9:
            _die("usage: record-onset HARDWARE.json pull|push WINDOW_S SETTLED_S ramp|rounds INC ARR ...")
        try:
            record_onset(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), _groups(sys.argv[6:]))
        except (ConfigError, ValueError, OSError) as e:
            _die(f"record-onset: {e}")
    elif role in ("joined", "record-joined"):  # HARDWARE.json pull|push SPAN_S INC ARR [...]
        if len(sys.argv) < 7:
            _die(f"usage: {role} HARDWARE.json pull|push SPAN_S incumbent.txt arrivals.txt [...]")
        try:
            joined(sys.argv[2], sys.argv[3], float(sys.argv[4]), _pairs(sys.argv[5:]), role == "record-joined")
        except (ConfigError, ValueError, OSError) as e:
            _die(f"{role}: {e}")
    elif role == "record":  # HARDWARE.json INCUMBENT_KIND incumbent.txt arrivals.txt
        record(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])


def _die(message: str):
    """Bad input: one line and exit code 2, as the CLI does."""
    print(message, file=sys.stderr)
    sys.exit(2)


def _pairs(paths):
    if not paths or len(paths) % 2:
        _die("give incumbent.txt arrivals.txt pairs, one per run")
    return paths


PLURAL = {"pull": "pulls", "push": "pushes"}


def _field(name: str, direction: str, whose: str = "") -> str:
    """A pull field's name, or its push twin's (``sgdsim.hardware.push_twin``)."""
    from sgdsim.hardware import push_twin

    if direction not in PLURAL:
        raise ConfigError(f"direction must be pull or push{whose}, got {direction!r}")
    return name if direction == "pull" else push_twin(name)


def _write(hardware, values: dict) -> None:
    """Put measured ``values`` into a hardware file, keeping the rest of it."""
    import dataclasses

    from sgdsim.hardware import load_hardware, save_hardware

    save_hardware(dataclasses.replace(load_hardware(hardware), **values), hardware, force=True)


def record(hardware, incumbent_kind, incumbent_path, arrivals_path):
    """Write the fits into a hardware file: with a pull incumbent the arrivals are pushes."""
    arrivals, incumbent = report(incumbent_path, arrivals_path)
    if incumbent_kind not in PLURAL:
        _die(f"incumbent kind must be pull or push, got {incumbent_kind!r}")
    arriving = "push" if incumbent_kind == "pull" else "pull"
    _write(hardware, {_field("stall_prob", arriving): arrivals[0], _field("stall_mean_s", arriving): arrivals[1],
                      _field("stall_incumbent_prob", incumbent_kind): incumbent[0],
                      _field("stall_incumbent_mean_s", incumbent_kind): incumbent[1]})
    print(f"wrote the stalls of {PLURAL[arriving]} arriving and of {PLURAL[incumbent_kind]} under way "
          f"to {hardware}")


def progress_of(incumbent_path) -> list[tuple[float, np.ndarray]]:
    """Each incumbent transfer of a file: (its start, its (time, bytes) records); ``long``
    writes one, ``rounds`` and a logging server one per transfer."""
    blocks = []
    for block in open(incumbent_path).read().split("start ")[1:]:
        lines = [ln for ln in block.split("\n") if ln.strip()]
        blocks.append((float(lines[0]), np.array([[float(x) for x in ln.split()] for ln in lines[1:]])))
    return blocks


def arrivals_of(arrivals_path) -> list[list[float]]:
    """(index, start, end) of each arrival; negative indices are the lone ones."""
    return [[float(x) for x in ln.split()] for ln in open(arrivals_path) if ln.strip()]


def report(incumbent_path, arrivals_path):
    """Per arrival: the incumbent's longest progress gap while it ran, and its own time; returns
    the arrivals' and the incumbent's (probability, mean)."""
    prog = progress_of(incumbent_path)[0][1]
    arr = arrivals_of(arrivals_path)
    lone = np.median([e - s for i, s, e in arr if i < 0])
    gaps, slow = [], []
    for i, s, e in arr:
        if i < 0 or e > prog[-1, 0]:
            continue
        inside = prog[(prog[:, 0] >= s) & (prog[:, 0] <= e + GAP_S), 0]
        gaps.append(float(np.max(np.diff(inside))) if len(inside) > 1 else e - s)
        slow.append((e - s) - lone)
    gaps, slow = np.array(gaps), np.array(slow)
    rate = (prog[-1, 1] - prog[0, 1]) / (prog[-1, 0] - prog[0, 0]) * 8e-6
    print(f"incumbent {rate:.1f} Mbit/s over {prog[-1, 0] - prog[0, 0]:.0f} s; {len(gaps)} arrivals, "
          f"lone arrival {lone * 1e3:.0f} ms")
    print(f"incumbent stalls (progress gap > {GAP_S * 1e3:.0f} ms) during {np.sum(gaps > GAP_S)} "
          f"of {len(gaps)} arrivals; gaps: {', '.join(f'{g * 1e3:.0f}' for g in sorted(gaps)[-8:])} ms (largest)")
    print(f"arrivals over their lone time by > {GAP_S * 1e3:.0f} ms: {np.sum(slow > GAP_S)} of {len(slow)}; "
          f"excess: {', '.join(f'{x * 1e3:.0f}' for x in sorted(slow)[-8:])} ms (largest)")
    fit = fit_waits(slow)  # alone in its direction, a stalled arrival's link idles: excess = wait
    hit = gaps[gaps > GAP_S]
    print(f"arrivals (fit_waits): stall_prob {fit.prob:.2f}, stall_mean_s {fit.mean_s:.2f}; "
          f"incumbent: stall_incumbent_prob {len(hit) / len(gaps):.2f}, stall_incumbent_mean_s "
          f"{hit.mean() if len(hit) else 0.0:.2f} (its gaps over {GAP_S * 1e3:.0f} ms)")
    return (fit.prob, fit.mean_s), (len(hit) / len(gaps), float(hit.mean()) if len(hit) else 0.0)


def ramp_shares(incumbent_path, arrivals_path, bin_s=0.05, span_s=1.0):
    """One ramp run: the joiners' shares per bin (``sgdsim.lab.onset.joiner_shares``) against
    the incumbent's rate alone (the median over the gaps between arrivals)."""
    prog = progress_of(incumbent_path)[0][1]
    arr = [(s, e) for i, s, e in arrivals_of(arrivals_path) if i >= 0 and prog[0, 0] < s and e < prog[-1, 0]]
    at = lambda t: np.interp(t, prog[:, 0], prog[:, 1])  # noqa: E731
    alone = [(e + 0.3, s2 - 0.1) for (_, e), (s2, _) in zip(arr, arr[1:]) if s2 - e > 0.7]
    rate = float(np.median([(at(b) - at(a)) / (b - a) for a, b in alone]))  # arrivals can overrun
    return joiner_shares(prog, arr, rate, bin_s, span_s)


def round_shares(incumbent_path, arrivals_path, bin_s=0.05, span_s=1.0):
    """Rounds of a short incumbent and a joiner (``rounds`` with ``arrivals`` started later):
    per round, the joiner's share per bin against the incumbent's own rate before it joined."""
    arr = [(s, e) for i, s, e in arrivals_of(arrivals_path) if i >= 0]
    rows = []
    for (t0, prog), (s, e) in zip(progress_of(incumbent_path), arr):
        alone = prog[(prog[:, 0] > t0 + 0.1) & (prog[:, 0] < s)]
        if len(alone) < 3 or prog[-1, 0] < s + 0.3:
            continue  # the incumbent ran alone too briefly, or ended almost as the joiner came
        rate = (alone[-1, 1] - alone[0, 1]) / (alone[-1, 0] - alone[0, 0])
        rows.append(joiner_shares(prog, [(s, min(e, prog[-1, 0]))], rate, bin_s, span_s)[0])
    return np.array(rows)


def ramp(paths, read=ramp_shares, windows=(0.4, 0.5, 0.7, 1.0), bin_s=0.05):
    """Runs with joiners the same way as the incumbent (pairs incumbent.txt arrivals.txt, read
    by ``ramp_shares`` or ``round_shares``): the joiner's share per bin after its start, and the
    fitted onset of its advantage (``sgdsim.lab.onset``), per run and pooled over ``windows``.
    Returns the pooled delay (s), None without one."""
    runs = [read(a, b, bin_s) for a, b in zip(paths[::2], paths[1::2])]
    shares = np.vstack(runs)
    mean = np.nanmean(shares, axis=0)
    print(f"{len(runs)} run(s), {len(shares)} joiners; the joiner's share (mean, quartiles, joiners) "
          f"per {bin_s * 1e3:.0f} ms after its start:")
    for j in range(10):
        col = shares[:, j][~np.isnan(shares[:, j])]
        q = np.quantile(col, [0.25, 0.75])
        print(f"  {j * bin_s * 1e3:4.0f}-{(j + 1) * bin_s * 1e3:4.0f} ms: {mean[j]:.2f} [{q[0]:.2f}, {q[1]:.2f}] {len(col)}")
    show = lambda d: "no advantage" if d is None else f"{d:.3f} s"  # noqa: E731
    print("onset per run: " + ", ".join(show(onset_delay(sh, bin_s)) for sh in runs))
    print("pooled, by fit window: " + ", ".join(f"{w:.1f} s: {show(onset_delay(shares, bin_s, w))}" for w in windows))
    return onset_delay(shares, bin_s)


def record_onset(hardware, direction, window_s, settled_s, groups):
    """Write the onset of ``direction`` ("pull" or "push") into a hardware file, pooled over
    ``groups`` [(protocol "ramp" or "rounds", [incumbent.txt, arrivals.txt, ...])], fitted
    over ``window_s`` with the plateau from ``settled_s``; without an advantage there, the
    window, as a lower bound."""
    from sgdsim.lab.onset import recorded_onset

    try:
        field = _field("join_delay_s", direction)
    except ConfigError as e:
        _die(str(e))
    span_s = max(1.0, window_s)
    read = {"ramp": ramp_shares, "rounds": round_shares}
    rows = [read[kind](a, b, 0.05, span_s) for kind, paths in groups for a, b in zip(paths[::2], paths[1::2])]
    shares = np.vstack(rows)
    delay, bound = recorded_onset(shares, 0.05, window_s, settled_s)
    _write(hardware, {field: round(delay, 3)})
    print(f"{len(shares)} joiners: wrote {field} = {delay:.3f} s to {hardware}"
          + (" (no advantage within the window: a lower bound)" if bound else ""))


def joined(hardware, direction, span_s, paths, write, bin_s=0.05):
    """Runs of an incumbent (``rounds`` or ``long``) joined by arrivals the other way: the
    incumbent's share of the link per bin after each arrival's start, and the step fitted to it
    (``sgdsim.lab.joined``), written into the hardware file with ``write``."""
    from sgdsim.hardware import load_hardware
    from sgdsim.lab.joined import fit_each, fit_joined, incumbent_shares

    share_field, after_field, draws_field = (_field(f, direction, " (the incumbent's)") for f in
                                             ("two_way_joined", "two_way_joined_after_s", "two_way_joined_draws"))
    hw = load_hardware(hardware)
    if hw.two_way_table is None:
        raise ConfigError(f"{hardware} has no two_way_table (netbench --lab --two-way): the joined "
                          "share corrects it")
    d = 0 if direction == "pull" else 1
    table_share = hw.two_way_table[d][1][1]
    rows = [incumbent_shares(progress_of(a), [(s, e) for i, s, e in arrivals_of(b) if i >= 0],
                             hw.bandwidth_bps / 8, span_s, bin_s) for a, b in zip(paths[::2], paths[1::2])]
    shares = np.vstack(rows)
    after_s, share = fit_joined(shares, table_share, bin_s)
    curve = shares.mean(axis=0)
    print(f"{len(shares)} arrivals over {span_s:g} s; the incumbent's share per {2 * bin_s * 1e3:.0f} ms "
          f"after an arrival's start: {' '.join(f'{x:.2f}' for x in curve[::2])}")
    print(f"fit: the table's {table_share:.2f} for {after_s:.2f} s, then {share:.3f} "
          f"(mean over the span {curve.mean():.3f})")
    draws = fit_each(shares, table_share, bin_s)
    print(f"one by one: after {min(a for a, _ in draws):.2f}-{max(a for a, _ in draws):.2f} s, then "
          f"{min(s for _, s in draws):.2f}-{max(s for _, s in draws):.2f} "
          f"(mean {np.mean([s for _, s in draws]):.3f})")
    if write:
        _write(hardware, {share_field: round(share, 3), after_field: round(after_s, 3),
                          draws_field: tuple((round(a, 3), round(s, 4)) for a, s in draws)})
        print(f"wrote {share_field}, {after_field} and {draws_field} to {hardware}")


def _groups(args):
    """[(protocol, paths)] from ``ramp A B ... rounds C D ...``."""
    groups = []
    for a in args:
        if a in ("ramp", "rounds"):
            groups.append((a, []))
        elif not groups:
            _die("name the protocol first: ramp INC ARR ... or rounds INC ARR ...")
        else:
            groups[-1][1].append(a)
    for _, paths in groups:
        _pairs(paths)
    return groups


if __name__ == "__main__":
    main()
