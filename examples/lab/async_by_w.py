"""Is async PS throughput monotone in W, in real runs and in the simulator? (issue 35, item 5)

For every async case of the given validation runs measured at three or more worker counts:
measured and predicted (fine) examples/s by W, the largest fall from one worker count to the
next (negative: throughput dropped as workers were added), and whether the prediction rises and
falls where the runs do (signs of the steps between consecutive worker counts that agree).
Each measurement is the mean of the point's runs (3 on the lab trainer's grids, 1 on the torch
family's).

    python examples/lab/async_by_w.py docs/validation/{async,cnn,2ps,widecnn,torch}/points.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict


def cases(paths: list[str]) -> dict[str, dict[int, tuple[float, float]]]:
    """{case: {W: (measured, predicted)}} for the fine model's measured async points."""
    out: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["model"] == "fine" and r["measured"] and "async" in r["case"]:
                    out[r["case"]][int(r["workers"])] = (float(r["measured"]), float(r["predicted"]))
    return {c: d for c, d in out.items() if len(d) >= 3}


def steps(values: list[float]) -> list[float]:
    """Relative change from each worker count to the next."""
    return [b / a - 1 for a, b in zip(values, values[1:])]


def row(case: str, by_w: dict[int, tuple[float, float]]) -> str:
    ws = sorted(by_w)
    meas, pred = [by_w[w][0] for w in ws], [by_w[w][1] for w in ws]
    sm, sp = steps(meas), steps(pred)
    agree = sum((a >= 0) == (b >= 0) for a, b in zip(sm, sp))
    fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    return (f"| {case} | {', '.join(map(str, ws))} | {fmt(meas)} | {fmt(pred)} | {min(sm):+.1%} | "
            f"{min(sp):+.1%} | {agree} of {len(sm)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("points", nargs="+", help="points.csv files of sgdsim validate")
    args = ap.parse_args()
    found = cases(args.points)
    print("| case | W | measured | fine | largest fall, measured | fine | steps the same way |")
    print("|---|---|---|---|---:|---:|---:|")
    for case, by_w in sorted(found.items()):
        print(row(case, by_w))


if __name__ == "__main__":
    try:
        main()
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:  # one line, as for bad options
        print(f"async_by_w.py: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
