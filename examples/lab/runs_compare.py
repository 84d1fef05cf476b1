"""Later lab runs of committed points against the committed ones (``more_runs.py``'s output).

For each point in RUNS.csv: the committed runs (docs/validation/GRID/points.csv, read from the
given commit so that a re-written file does not count the new runs twice), the new runs, the
means and their standard errors, and the fine model's error against each mean (its prediction
as committed). A point with one new run is read as a check of the machine: the ratio of the new
run to the committed mean.

    python examples/lab/runs_compare.py docs/validation/repeats-w2/runs.csv --at ad4917c
    python examples/lab/runs_compare.py docs/validation/repeats-w2/drift.csv --at ad4917c
"""
from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess


def committed(grid: str, commit: str) -> dict[tuple[str, int], tuple[list[float], float]]:
    """{(case, workers): (runs, the fine prediction)} of a grid's points.csv at ``commit``."""
    text = subprocess.run(["git", "show", f"{commit}:docs/validation/{grid}/points.csv"],
                          capture_output=True, text=True, check=True).stdout
    return {(r["case"], int(r["workers"])): ([float(x) for x in r["measured_runs"].split(";")],
                                             float(r["predicted"]))
            for r in csv.DictReader(io.StringIO(text)) if r["model"] == "fine"}


def _se_pct(runs: list[float]) -> float:
    return 100 * statistics.stdev(runs) / len(runs) ** 0.5 / statistics.mean(runs) if len(runs) > 1 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", help="more_runs.py's CSV")
    ap.add_argument("--at", required=True, help="the commit whose points.csv hold the earlier runs")
    args = ap.parse_args()
    new: dict[tuple[str, str, int], list[float]] = {}
    for r in csv.DictReader(open(args.runs, newline="", encoding="utf-8")):
        new.setdefault((r["grid"], r["case"], int(r["workers"])), []).append(float(r["measured_runs"]))
    grids = {g: committed(g, args.at) for g, _, _ in new}
    print("| point | W | committed runs | mean (SE) | new runs | pooled mean (SE) | new / committed | fine error, committed → pooled |")
    print("|---|---:|---|---:|---|---:|---:|---:|")
    before, after = [], []
    for (g, case, w), got in new.items():
        old, predicted = grids[g][(case, w)]
        pooled = old + got
        m0, m1 = statistics.mean(old), statistics.mean(pooled)
        e0, e1 = 100 * (predicted / m0 - 1), 100 * (predicted / m1 - 1)
        before.append(abs(e0))
        after.append(abs(e1))
        print(f"| {g}: {case} | {w} | {', '.join(f'{x:.4g}' for x in old)} | {m0:.4g} ({_se_pct(old):.1f} %) "
              f"| {', '.join(f'{x:.4g}' for x in got)} | {m1:.4g} ({_se_pct(pooled):.1f} %) "
              f"| {statistics.mean(got) / m0:.3f} | {e0:+.1f} → {e1:+.1f} % |")
    print(f"\n{len(new)} points: fine mean |error| {statistics.mean(before):.1f} → {statistics.mean(after):.1f} %, "
          f"max {max(before):.1f} → {max(after):.1f} % (W = 1 points are fits: their error is the calibration's)")
    ratios = [statistics.mean(got) / statistics.mean(grids[g][(c, w)][0]) for (g, c, w), got in new.items()]
    print(f"new / committed: mean {statistics.mean(ratios):.3f}, from {min(ratios):.3f} to {max(ratios):.3f}")


if __name__ == "__main__":
    main()
