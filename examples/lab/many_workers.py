"""Traced runs of W >= 2 workers against the simulator, leg by leg (docs/validation/regimes/,
finding 16): per step the mean pull, compute and push; how much of the time each direction of
the PS's link is busy and what it carries then; and the share of pairs of workers within 0.1
of a step of lock-step; and the lab's host contention, compute slower per second of another
worker's pull or push, overlaps summed over the other workers (``validate.coupling``). The
simulator runs the grid's case at the traced worker count, one
replication per seed, with its calibrated hardware file (``--set FIELD=VALUE`` replaces a
field, as in tcp_dynamics.py).

    python examples/lab/many_workers.py docs/validation/regimes/traced200-cnn-nooverlap-w3.json heldout200d 1
    python examples/lab/many_workers.py docs/validation/regimes/traced200-cnn-nooverlap-w3.json heldout200d 1 \\
        --set two_way_busy=0.778 --set two_way_busy_push=0.864
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from itertools import combinations

import numpy as np

import sgdsim
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.validate.coupling import coupling
from sgdsim.validate.regimes import (concurrency_shares, folded, phase_occupancy, phase_steps,
                                     step_transfers)
from sim_phases import link_spans, measured_case
from tcp_dynamics import field_value

HEADER = ["| | examples/s | pull (s) | compute (s) | push (s) | downlink busy | its Mbit/s | "
          "uplink busy | its Mbit/s | pairs within 0.1 of lock-step |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def row(label: str, throughput: float, steps: dict, size_bytes: float) -> str:
    """One table row from each worker's steps, [((pull_start, pull_end), (push_start, push_end))]."""
    every = [s for v in steps.values() for s in v]
    legs = [np.mean([b - a for (a, b), _ in every]), np.mean([q[0] - p[1] for p, q in every]),
            np.mean([b - a for _, (a, b) in every])]
    links = []
    for direction in (0, 1):
        spans = [s[direction] for s in every]
        busy = 1.0 - concurrency_shares(spans).get(0, 0.0)
        span_s = max(b for _, b in spans) - min(a for a, _ in spans)
        links += [busy, 8 * size_bytes * len(spans) / (busy * span_s) / 1e6]
    starts = [[s[0][0] for s in v] for v in steps.values()]
    near = float(np.mean([phase_occupancy(folded(phase_steps(a, b)[0]))[:2].sum()
                          for a, b in combinations(starts, 2)]))
    return (f"| {label} | {throughput:.1f} | " + " | ".join(f"{x:.3f}" for x in legs)
            + f" | {links[0]:.2f} | {links[1]:.0f} | {links[2]:.2f} | {links[3]:.0f} | {near:.2f} |")


def lab_steps(run: dict, skip_s: float) -> dict:
    """A traced run's steps per worker, from ``skip_s`` after its first pull."""
    steps = step_transfers(run["events"])
    t0 = min(s[0][0] for v in steps.values() for s in v) + skip_s
    return {w: [s for s in v if s[0][0] > t0] for w, v in steps.items()}


def sim_steps(timeline, workers: int, skip_steps: int) -> dict:
    out = {}
    for w in range(workers):
        pulls, pushes = link_spans(timeline, w, "downlink"), link_spans(timeline, w, "uplink")
        out[w] = [(pulls[k], pushes[k]) for k in sorted(pulls) if k in pushes and k >= skip_steps]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="async_regimes.py --trace output of one worker count")
    ap.add_argument("grid", help="name G of examples/grids/lab-G.toml with docs/validation/G/")
    ap.add_argument("case", type=int, help="the traced configuration's index in the grid")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--skip", type=float, default=10.0, help="lab: seconds left out at the start")
    args = ap.parse_args()
    try:
        with open(args.trace, encoding="utf-8") as f:
            runs = [r for r in json.load(f)["runs"] if r.get("events")]
        if not runs:
            raise ConfigError(f"{args.trace} holds no traced runs (measure them with --trace)")
        workers = int(runs[0]["workers"])
        case, prof, _, hw = measured_case(args.grid, args.case, workers)
        for field, value in (s.split("=", 1) for s in args.set):
            if field not in {f.name for f in dataclasses.fields(hw)}:
                raise ConfigError(f"--set {field}: not a field of a hardware file")
            hw = dataclasses.replace(hw, **{field: field_value(value)})
    except (ConfigError, ProfileError, OSError, KeyError, ValueError) as e:
        print(f"many_workers.py: error: {e}", file=sys.stderr)
        sys.exit(2)
    size = prof.model_bytes()
    print(f"{case.name}, W = {workers}", *HEADER, sep="\n")
    lab = [lab_steps(r, args.skip) for r in runs]
    for r, steps in zip(runs, lab):
        print(row(f"lab, run {r['repeat']}", r["throughput"], steps, size))
    for seed in range(args.seeds):
        p = sgdsim.predict(prof, workers=[workers], replications=1, steps=args.steps, seed=seed,
                           timeline=True, **hw.predict_kwargs("ps", "async"))[0]
        print(row(f"simulator, seed {seed}", p.throughput, sim_steps(p.timeline, workers, 20), size),
              flush=True)
    coef, se, n = coupling(lab)["compute"]
    print(f"lab's compute, {n} steps: {coef[0]:.3f} s alone, slower per second of another's pull "
          f"{100 * coef[1]:+.1f} ± {100 * se[1]:.1f} %, push {100 * coef[2]:+.1f} ± {100 * se[2]:.1f} %")


if __name__ == "__main__":
    main()
