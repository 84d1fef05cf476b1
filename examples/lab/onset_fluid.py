"""Why the join boost's onset separates the MLP's two workers from the wide CNN's (finding 8).

Two things, both for docs/validation/regimes/README.md, finding 8:

- a fluid model of two async workers (one transfer each way per step, compute c between the
  pull and the push, none after the push), time-stepped at 2 ms: flows share a link by their
  weights, each drawn lognormal (the share CV) when it starts; a flow joining a link whose
  other flow has run at least A gets weight K after it has run D. It prints two workers'
  throughput over one worker's for 8 start offsets and their mean;
- ``--offsets TRACED.json``: in traced two-worker lab runs, every pair of overlapping
  transfers one way, grouped by start offset, with the mean end offset (the later one's end
  minus the earlier one's). Equal sharing keeps the offset; a boost shrinks it.

    python examples/lab/onset_fluid.py                 # MLP and wide CNN, onset 0, 0.05, 0.1 s (~30 s)
    python examples/lab/onset_fluid.py --offsets docs/validation/regimes/traced-w2.json
"""
from __future__ import annotations

import argparse
import json
import math
import random

import numpy as np

# (T: one transfer alone, c: compute between pull and push, (K pulls, K pushes), (A ...), CV)
CASES = {"mlp": (0.855, 0.016, (1.31, 1.12), (0.025, 0.15), 0.358),
         "widecnn": (1.48, 0.47, (1.36, 1.31), (0.094, 0.044), 0.32)}


def two_workers(T, c, K, A, cv, onset_s, start, seed, dur_s=400.0, warm_s=40.0, dt=0.002):
    """Steps per second of two workers after ``warm_s``, worker 1 starting ``start`` of a
    lone step after worker 0."""
    rng = random.Random(seed)
    sig = math.sqrt(math.log(1 + cv * cv))
    phase, left, wait = [0, 0], [T, T], [0.0, start * (2 * T + c)]
    on = [[False, False], [False, False]]  # [link][worker]; link 0 pulls, 1 pushes
    base, weight = [[1.0] * 2 for _ in range(2)], [[1.0] * 2 for _ in range(2)]
    since, due = [[0.0] * 2 for _ in range(2)], [[None] * 2 for _ in range(2)]
    t, done = 0.0, 0

    def join(link, k):
        on[link][k], since[link][k] = True, t
        base[link][k] = weight[link][k] = rng.lognormvariate(-sig * sig / 2, sig) if cv else 1.0
        other = 1 - k
        due[link][other] = None
        if on[link][other]:
            weight[link][other] = base[link][other]
            if t - since[link][other] >= A[link] and K[link] != 1.0:
                due[link][k] = t + onset_s

    if wait[1] == 0:
        join(0, 1)
    join(0, 0)
    while t < dur_s:
        for link in (0, 1):
            for k in (0, 1):
                if due[link][k] is not None and t >= due[link][k]:
                    if on[link][k] and on[link][1 - k]:
                        weight[link][k] = base[link][k] * K[link]
                    due[link][k] = None
            active = [k for k in (0, 1) if on[link][k]]
            total = sum(weight[link][k] for k in active)
            for k in active:
                left[k] -= dt * weight[link][k] / total
        t += dt
        for k in (0, 1):
            if wait[k] > 0:
                wait[k] -= dt
                if wait[k] <= 0:
                    wait[k] = 0.0
                    join(0, k)
            elif phase[k] == 1:
                left[k] -= dt
                if left[k] <= 0:
                    phase[k], left[k] = 2, T
                    join(1, k)
            elif left[k] <= 0:
                link = phase[k] // 2
                on[link][k], due[link][k] = False, None
                if phase[k] == 0:
                    phase[k], left[k] = 1, c
                else:
                    done += t > warm_s
                    phase[k], left[k] = 0, T
                    join(0, k)
    return done / (dur_s - warm_s)


def fluid(onsets):
    for name, (T, c, K, A, cv) in CASES.items():
        for onset_s in onsets:
            ratios = [two_workers(T, c, K, A, cv, onset_s, i / 8, seed=i) * (2 * T + c) for i in range(8)]
            print(f"{name}, onset {onset_s:.2f} s: two workers over one, per start "
                  f"{' '.join(f'{r:.2f}' for r in ratios)}; mean {np.mean(ratios):.3f}")


def offsets(path):
    from sgdsim.validate.regimes import step_transfers

    for run in json.load(open(path))["runs"]:
        steps = step_transfers(run["events"])
        ranks = sorted(steps)[:2]
        print(f"run {run['repeat']}: {float(run['throughput_intervals']):.2f} examples/s")
        for d, what in ((0, "pulls"), (1, "pushes")):
            mine = [sorted(step[d] for step in steps[k]) for k in ranks]
            pairs = [(b[0] - a[0], b[1] - a[1]) for a in mine[0] for b in mine[1] if b[0] < a[1] and a[0] < b[1]]
            pairs = [(abs(s), e if s >= 0 else -e) for s, e in pairs]  # the later one minus the earlier
            for lo, hi in ((0.0, 0.2), (0.2, 0.5), (0.5, 1.0)):
                sel = [(s, e) for s, e in pairs if lo <= s < hi]
                if sel:
                    print(f"  {what} starting {lo:.1f}-{hi:.1f} s apart: {len(sel)} pairs, mean start "
                          f"offset {np.mean([s for s, _ in sel]):.3f} s, mean end offset "
                          f"{np.mean([e for _, e in sel]):+.3f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onsets", default="0,0.05,0.1", help="onset delays (s) for the fluid model")
    ap.add_argument("--offsets", metavar="TRACED.json", help="start and end offsets of traced two-worker runs")
    args = ap.parse_args()
    if args.offsets:
        offsets(args.offsets)
    else:
        fluid([float(x) for x in args.onsets.split(",")])


if __name__ == "__main__":
    main()
