"""The fine model's error per point from every measurement of it (docs/validation/third-w2/ rule).

A point measured in several sessions has one prediction per measurement (each profiled and
calibrated on its own W = 1 runs). Its pooled error uses every run against its own
measurement's prediction: 1 / mean(run / prediction) − 1 (positive: predicted too high). The
points of the ``--points`` files make the table; ``--again`` files add measurements of some of
them (matched by case and worker count). Calibration points (fitted = 1) are left out. The last
line gives the mean and max |pooled error|, its signed mean and how many points are too high.

    python examples/lab/pooled_errors.py \
        --points docs/validation/{async,cnn,allreduce,2ps,widecnn,heldout200,heldout200b,heldout200c,heldout200d,heldout200e,heldout-margin}/points.csv \
        --again docs/validation/second-w2/points.csv docs/validation/third-w2/points.csv
"""
from __future__ import annotations

import argparse
import sys

from fit_margin import checks_of


def ratios(path: str) -> dict[tuple[str, int], list[float]]:
    """(case, workers) -> run / prediction for every run of the file's fine checks."""
    return {key: [x / p for x in runs] for key, (runs, p, _, _) in checks_of(path).items()}


def error_pct(rs: list[float]) -> float:
    return 100 * (len(rs) / sum(rs) - 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", nargs="+", required=True, help="points.csv files: the table's points")
    ap.add_argument("--again", nargs="*", default=[], help="points.csv files measuring some points again")
    args = ap.parse_args(argv)
    try:
        base: dict[tuple[str, int], list[float]] = {}
        for p in args.points:
            base.update(ratios(p))
        again = [ratios(p) for p in args.again]
    except (OSError, KeyError, ValueError, ZeroDivisionError) as exc:
        print(f"pooled_errors: cannot read the points: {exc}", file=sys.stderr)
        return 2
    if not base:
        print("pooled_errors: no measured fine points in --points", file=sys.stderr)
        return 2
    errors = {}
    print("| point | errors per measurement (runs) | pooled error (runs) |\n|---|---|---:|")
    for key, rs in base.items():
        measurements = [rs] + [m[key] for m in again if key in m]
        pooled = [r for m in measurements for r in m]
        errors[key] = error_pct(pooled)
        if len(measurements) > 1:
            each = ", ".join(f"{error_pct(m):+.1f} % ({len(m)})" for m in measurements)
            print(f"| {key[0]} W={key[1]} | {each} | {errors[key]:+.1f} % ({len(pooled)}) |")
    unmatched = sorted({k for m in again for k in m} - set(base))
    if unmatched:
        print(f"pooled_errors: {unmatched[0]} of --again is not among the points", file=sys.stderr)
        return 2
    worst = max(errors, key=lambda k: abs(errors[k]))
    mean = sum(abs(e) for e in errors.values()) / len(errors)
    bias = sum(errors.values()) / len(errors)
    high = sum(e > 0 for e in errors.values())
    print(f"\n{len(errors)} points, pooled: fine mean {mean:.1f} %, max {abs(errors[worst]):.1f} % "
          f"({worst[0]} W={worst[1]}, {errors[worst]:+.1f} %), signed mean {bias:+.1f} %, "
          f"too high {high} of {len(errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
