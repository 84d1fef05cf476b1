"""Fit the fine interval's model-error margin to validation runs and check it on held-out runs
(the rule of docs/validation/model-error/README.md; ``sgdsim.evaluate.margin``).

    python examples/lab/fit_margin.py \
        --fit docs/validation/{async,cnn,allreduce,2ps,widecnn}/points.csv \
        --check docs/validation/{heldout200,heldout200b,heldout200c,heldout200d,heldout200e,second-w2,heldout-margin}/points.csv

Each points.csv holds the simulator's interval (``sgdsim validate`` predicts without a margin)
and every lab run of each point; calibration points (fitted = 1) are left out.
"""
from __future__ import annotations

import argparse
import csv
import math
import sys

from sgdsim.evaluate.margin import conformal_margin, coverage, run_score

LEVEL = 0.95
RULE_MIN_HELD_OUT = 0.90
NEEDED = {"case", "model", "workers", "predicted", "measured_runs", "interval_low", "interval_high", "fitted"}


def checks_of(path: str) -> dict[tuple[str, int], tuple[list[float], float, float, float]]:
    """{(case, workers): (its runs, predicted, low, high)} for the file's measured fine checks."""
    with open(path, encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not NEEDED <= set(reader.fieldnames or ()):
            raise ValueError(f"{path} is not a points.csv of sgdsim validate")
        rows = [r for r in reader if r["model"] == "fine" and r["fitted"] != "1" and r["measured_runs"]]
    return {(r["case"], int(r["workers"])): ([float(x) for x in r["measured_runs"].split(";")],
                                             float(r["predicted"]), float(r["interval_low"]),
                                             float(r["interval_high"])) for r in rows}


def runs_of(path: str) -> list[tuple[float, float, float, float]]:
    """(measured run, predicted, low, high) for every single run of the file's fine checks."""
    return [(x, p, lo, hi) for runs, p, lo, hi in checks_of(path).values() for x in runs]


def widening(runs, margin: float) -> str:
    """Mean relative half-width of the runs' intervals, before -> after the margin."""
    def hw(r, m):
        _, p, lo, hi = r
        return (math.hypot((hi - p) / p, m) + math.hypot((p - lo) / p, m)) / 2
    n = max(len(runs), 1)
    return f"±{100 * sum(hw(r, 0) for r in runs) / n:.1f} % -> ±{100 * sum(hw(r, margin) for r in runs) / n:.1f} %"


def line(name: str, runs, margin: float) -> str:
    return (f"| {name} | {len(runs)} | {100 * coverage(runs, 0.0):.0f} % | "
            f"{100 * coverage(runs, margin):.0f} % | {widening(runs, margin)} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", nargs="+", required=True, help="points.csv files the margin is fitted to")
    ap.add_argument("--check", nargs="*", default=[], help="held-out points.csv files")
    args = ap.parse_args(argv)
    try:
        fit = {p: runs_of(p) for p in args.fit}
        check = {p: runs_of(p) for p in args.check}
    except (OSError, KeyError, ValueError) as exc:
        print(f"fit_margin: cannot read the points: {exc}", file=sys.stderr)
        return 2
    cal = [r for rs in fit.values() for r in rs]
    margin = conformal_margin((run_score(*r) for r in cal), LEVEL)
    if not math.isfinite(margin):
        print(f"fit_margin: {len(cal)} runs are too few for a {LEVEL:.0%} margin", file=sys.stderr)
        return 2
    print(f"margin m = {100 * margin:.2f} % ({LEVEL:.0%} split conformal over {len(cal)} runs)\n")
    print("| runs | n | inside, no margin | inside, with m | mean half-width |")
    print("|---|---:|---:|---:|---|")
    for path, runs in [*fit.items(), *check.items()]:
        print(line(path, runs, margin))
    held = [r for rs in check.values() for r in rs]
    print(line("**fitted to**", cal, margin))
    if held:
        print(line("**held out**", held, margin))
        ok = coverage(held, margin) >= RULE_MIN_HELD_OUT
        print(f"\nrule: held-out runs inside with m >= {RULE_MIN_HELD_OUT:.0%}: "
              f"{'met' if ok else 'NOT met'} ({100 * coverage(held, margin):.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
