"""How async PS transfers split between the PS NIC's two directions: traced lab runs against the
simulator, two variants of the busy shares tried on the held-out torch grids (neither kept), and
the choice of the shape the simulator's busy shares keep (adopted).

With flat busy shares the fine model was low at W >= 3 on async PS: -5.2 % signed over the 36
such points of the five torch grids, -2.6 % over the lab trainer's 10 (``knob_ablation.py``,
2026-12-01, before the shape). Where the flat busy
shares apply (3 or more transfers on the NIC, both ways busy), each direction finishes
transfers at a rate that does not depend on the split (n pulls against m pushes), so the split
walks without a pull towards the middle and spends time at (W, 0) and (0, W), where one
direction idles. This script prints, for the lab's traced 4- and 8-worker runs
(``docs/validation/regimes/traced-w48.json``: lab:mlp-10mb, batch 16, 100 Mbit/s) and the
simulator on the same case, the share of time each direction idles and the commonest splits.

``--variants`` also replays every held-out torch grid and the lab trainer's grids with the
table's shape instead of the flat shares, scaled so that the traced runs' bytes are moved
(``busy.py``'s equation with Σ f(n, m)·t in place of Σ t): one scale per direction, or one per
class of 3-4 and 5 or more transfers.

``--fit-shape`` chooses the exponent of the table's shape in the busy shares
(``two_way_busy_shape``, 0 flat to 1 the table's own shape; the shares fitted again for each):
the one whose simulated runs leave each direction idle as often as the traced runs do.

    python examples/lab/split_occupancy.py              # ~10 s
    python examples/lab/split_occupancy.py --variants   # ~3 min more
    python examples/lab/split_occupancy.py --fit-shape  # ~2 min
    python examples/lab/split_occupancy.py --fit-shape --rate 200   # the same case at 200 Mbit/s
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

import knob_ablation as ka  # beside this script
from busy import traced_runs  # beside this script too
from sgdsim.analytic.two_way import BUSY_FLOWS
from sgdsim.lab.busy import busy_shares, busy_terms, split_intervals
from sgdsim.lab.traces import pulls_pushes

TRACED = "docs/validation/regimes/traced-w48.json"
TRACED_200 = "docs/validation/regimes/traced200-w48.json"  # the same case at 200 Mbit/s
PROFILE = "docs/validation/async/profiles/ps-async-nooverlap.json"
HW = {"100": "examples/grids/hardware-lab-100mbps.json", "200": "examples/grids/hardware-lab-200mbps.json"}
ALPHA = "4.65e-10"  # the case's calibrated parse cost (docs/validation/async/summary.json)


def occupancy(pulls, pushes, skip=0.15):
    """(pull direction idle, push direction idle, {(n, m): share of time}) after the first
    ``skip`` of the run (its start) and before its last 5 %, from ``sgdsim.lab.busy``'s
    intervals between starts and ends."""
    n, m, t = split_intervals(pulls, pushes)
    ends = min(s for s, _ in pulls + pushes) + np.cumsum(t)
    a, b = ends[0] + skip * (ends[-1] - ends[0]), ends[-1] - 0.05 * (ends[-1] - ends[0])
    acc: collections.Counter = collections.Counter()
    for split, lo, hi in zip(zip(n.tolist(), m.tolist()), ends - t, ends):
        if min(hi, b) > max(lo, a):
            acc[split] += min(hi, b) - max(lo, a)
    total = sum(acc.values())
    idle = [sum(v for s, v in acc.items() if s[d] == 0) / total for d in (0, 1)]
    return idle[0], idle[1], {s: v / total for s, v in acc.items()}


def simulated(workers: int, seed: int, hw: str):
    """The simulator's pulls and pushes (start, end) of one 200-step run, from its timeline."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.json")
        subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", PROFILE, "--hardware", hw,
                        "--overhead-alpha", ALPHA, "--workers", str(workers), "--replications", "1",
                        "--seed", str(seed), "--steps", "200", "--timeline", trace],
                       check=True, capture_output=True)
        events = json.load(open(trace, encoding="utf-8"))
    spans: dict = {}
    for e in events["traceEvents"] if isinstance(events, dict) else events:
        if e.get("cat") in ("downlink", "uplink"):
            key = (e["cat"], e["args"]["worker"], e["args"]["step"])
            s, t = e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6
            old = spans.get(key)
            spans[key] = (min(old[0], s), max(old[1], t)) if old else (s, t)
    return ([v for k, v in spans.items() if k[0] == "downlink"],
            [v for k, v in spans.items() if k[0] == "uplink"])


def line(label: str, pulls, pushes) -> str:
    down, up, splits = occupancy(pulls, pushes)
    top = sorted(splits.items(), key=lambda kv: -kv[1])[:8]
    return f"| {label} | {down:.1%} | {up:.1%} | " + ", ".join(f"{s}: {v:.2f}" for s, v in top) + " |"


def traced(hw: dict) -> tuple[list, list]:
    """The traced runs a file's busy shares were fitted on: (each run's events, its transfer's
    bytes, as the file recorded them: the lab's CNN moves the fewer)."""
    sizes = hw["measured"]["busy"]["model_bytes"]
    sizes = sizes if isinstance(sizes, list) else [sizes]
    runs = traced_runs(hw["measured"]["busy"]["traced"])
    return ([r["events"] for r in runs],
            [sizes[0 if len(sizes) == 1 or "cnn" in r["model"] else 1] for r in runs])


def shaped_file(path: str, shape: float, dest: str) -> bool:
    """The hardware file with its busy shares fitted again with the table's shape to the power
    ``shape`` (``busy_shares(..., shape=)``), as ``examples/lab/busy.py --shape`` records them;
    False (nothing written) when a fitted share is above 1."""
    hw = json.load(open(path, encoding="utf-8"))
    runs, sizes = traced(hw)
    flows = tuple(hw["measured"]["busy"].get("flows", (BUSY_FLOWS,)))
    pull, push = busy_shares(runs, sizes, hw["bandwidth_bps"], hw["two_way_table"], flows, shape)
    if max(np.max(pull), np.max(push)) > 1.0:
        return False
    for key in ("two_way_busy_shaped", "two_way_busy_shaped_push", "two_way_busy_shape"):
        hw.pop(key, None)
    if shape > 0:
        hw.update(two_way_busy_shaped=pull, two_way_busy_shaped_push=push, two_way_busy_shape=shape)
    with open(dest, "w", encoding="utf-8") as f:
        json.dump(hw, f)
    return True


def fit_shape(rate: str = "100", seeds=range(1, 9)) -> float:
    """The shape whose simulated runs leave each direction idle as often as the traced lab runs
    do (W = 4 and 8, both directions: least squares over the four mean idle shares), at the
    lab's 100 or 200 Mbit/s (its hardware file and traced runs)."""
    lab: dict = collections.defaultdict(list)
    for run in json.load(open(TRACED if rate == "100" else TRACED_200, encoding="utf-8"))["runs"]:
        lab[run["workers"]].append(occupancy(*pulls_pushes(run["events"]))[:2])
    target = {w: np.mean(v, axis=0) for w, v in lab.items()}
    print("| shape | W = 4 idle (pulls, pushes) | W = 8 idle | squared distance |\n|---:|---|---|---:|")
    print(f"| lab | {_pair(target[4])} | {_pair(target[8])} | |")
    best = (math.inf, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        for shape in np.round(np.linspace(0, 1, 11), 1):
            dest = os.path.join(tmp, "hw.json")
            if not shaped_file(HW[rate], float(shape), dest):
                print(f"| {shape:.1f} | a share above 1: the table's shape gives less than the runs moved | | |")
                continue
            sim = {w: np.mean([occupancy(*simulated(w, s, dest))[:2] for s in seeds], axis=0) for w in (4, 8)}
            dist = sum(float(np.sum((100 * (sim[w] - target[w])) ** 2)) for w in (4, 8))
            print(f"| {shape:.1f} | {_pair(sim[4])} | {_pair(sim[8])} | {dist:.1f} |", flush=True)
            best = min(best, (dist, float(shape)))
    print(f"\nshape {best[1]:.1f}: the least squared distance")
    return best[1]


def _pair(v) -> str:
    return f"{100 * v[0]:.1f} %, {100 * v[1]:.1f} %"


def scales(hw: dict, classes) -> list:
    """Per direction, the scale of the measured table per class of transfers on the NIC that
    moves the traced runs' bytes (``sgdsim.lab.busy``'s equations with Σ f·t for Σ t)."""
    rate, (runs, sizes) = hw["bandwidth_bps"] / 8, traced(hw)
    rows: list[list] = [[], []]
    for d, unexplained, t, f, both, k in busy_terms(runs, sizes, hw["bandwidth_bps"], hw["two_way_table"],
                                                     np.asarray(classes)):
        rows[d].append([unexplained] + [rate * float(np.sum((f * t)[both & (k == i)]))
                                        for i in range(len(classes))])
    out = []
    for r in rows:
        a = np.array(r)
        w = 1 / np.sqrt(a[:, 1:].sum(axis=1))
        out.append(np.linalg.lstsq(a[:, 1:] * w[:, None], a[:, 0] * w, rcond=None)[0])
    return out


def scaled_file(path: str, classes, dest: str) -> None:
    """The hardware file with its table scaled (``scales``) where the flat shares applied,
    and without the flat shares."""
    hw = json.load(open(path, encoding="utf-8"))
    s = scales(hw, classes)
    for d, rows in enumerate(hw["two_way_table"]):
        for n, row in enumerate(rows):
            for m, v in enumerate(row):
                if n >= 1 and m >= 1 and n + m >= BUSY_FLOWS and v is not None:
                    row[m] = float(min(1.0, v * s[d][np.searchsorted(classes, n + m, side="right") - 1]))
    for key in ("two_way_busy", "two_way_busy_push", "two_way_busy_shape", "two_way_busy_shaped",
                "two_way_busy_shaped_push"):
        hw.pop(key, None)
    print(f"  {os.path.basename(path)}: scales (pulls, pushes) by class {list(classes)}: "
          f"{[[round(float(x), 3) for x in v] for v in s]}")
    with open(dest, "w", encoding="utf-8") as f:
        json.dump(hw, f)


def replays(files: dict) -> str:
    """The fine model's held-out and lab errors with every case's hardware file replaced."""
    from sgdsim.hardware import load_hardware
    import dataclasses

    def vary(grid, _):
        return dataclasses.replace(grid, cases=tuple(
            dataclasses.replace(c, hardware_spec=load_hardware(files[os.path.basename(c.hardware)]))
            if c.hardware and os.path.basename(c.hardware) in files else c for c in grid.cases))
    with tempfile.TemporaryDirectory() as tmp:
        lab = ka.errors(ka.FITTED, {}, os.path.join(tmp, "f"), vary)
        held = ka.errors(ka.HELD_OUT_ALL, {}, os.path.join(tmp, "h"), vary)
    by_w = collections.defaultdict(list)
    for meas, pred, _, _, w, mode in held:
        if mode == "async" and w >= ka.SATURATED:
            by_w[w].append(100 * (pred / meas - 1))
    ws = ", ".join(f"W = {w}: {np.mean(v):+.1f} %" for w, v in sorted(by_w.items()))
    return (f"lab trainer {ka.line(lab)}, async W >= 3 {ka.saturated(lab)}; held-out {ka.line(held)}, "
            f"async W >= 3 {ka.saturated(held)} ({ws})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", action="store_true", help="also replay the grids with two variants")
    ap.add_argument("--fit-shape", action="store_true", help="only choose the busy shares' shape (about 2 min)")
    ap.add_argument("--rate", choices=sorted(HW), default="100",
                    help="--fit-shape on the traced runs at this link rate, Mbit/s (default 100)")
    args = ap.parse_args()
    if args.fit_shape:
        fit_shape(args.rate)
        return
    print("| run | pull direction idle | push direction idle | commonest splits (pulls, pushes) |\n|---|---:|---:|---|")
    for run in json.load(open(TRACED, encoding="utf-8"))["runs"]:
        print(line(f"lab, W = {run['workers']}, run {run['repeat'] + 1}", *pulls_pushes(run["events"])))
    for w in (4, 8):
        for seed in (1, 2):
            print(line(f"simulator, W = {w}, seed {seed}", *simulated(w, seed, HW["100"])))
    if not args.variants:
        return
    print("\nthe files as committed (flat busy shares):", replays({}))
    with tempfile.TemporaryDirectory() as tmp:
        for classes in ((BUSY_FLOWS,), (BUSY_FLOWS, 5)):
            files = {os.path.basename(p): os.path.join(tmp, f"{classes}-{os.path.basename(p)}") for p in HW.values()}
            for p in HW.values():
                scaled_file(p, classes, files[os.path.basename(p)])
            print(f"the table's shape, scaled per class {list(classes)}:", replays(files))


if __name__ == "__main__":
    main()
