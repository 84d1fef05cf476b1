"""Could the lab's two shared cores be stated as a capacity bound from the calibration run?

For every case of a measured grid: each run's CPU seconds per example (all its processes'),
and the bound that CPU would put on throughput if it stayed what the case's smallest run
(its calibration point) measured: ``cores / (CPU per example)``. Beside it the fine model's
prediction and the measurement. A bound worth adding to the model must sit below a prediction
that is too high, and above every measurement.

    python examples/lab/cpu_bound.py docs/validation/torch docs/validation/torch-b
"""
from __future__ import annotations

import collections
import csv
import json
import os
import sys

CORES = 2  # the lab machine's


def cpu_per_example_s(run: dict) -> float:
    return sum(run["cpu_s"]) / (run["throughput"] * run["duration_s"])


def rows(out: str):
    fine = {(r["case"], int(r["workers"])): float(r["predicted"])
            for r in csv.DictReader(open(os.path.join(out, "points.csv"), encoding="utf-8"))
            if r["model"] == "fine" and r["measured"]}
    runs = collections.defaultdict(list)
    for line in open(os.path.join(out, "runs.jsonl"), encoding="utf-8"):
        d = json.loads(line)
        runs[d["case"]].append(d)
    grid = os.path.basename(out.rstrip("/"))
    for case, rs in runs.items():
        rs.sort(key=lambda d: d["workers"])
        cpu_s = [cpu_per_example_s(d) for d in rs]
        for d, c in zip(rs, cpu_s):  # the bound from the smallest W: cpu_s[0]
            yield (grid, case, d["workers"], c * 1e3, CORES / cpu_s[0], fine.get((case, d["workers"])),
                   d["throughput"])


def check(outs: list[str]) -> None:
    """One line and exit code 2 for a folder that is not a measured grid's."""
    missing = "no folder given" if not outs else next(
        (f"{out} has no {name}" for out in outs for name in ("points.csv", "runs.jsonl")
         if not os.path.isfile(os.path.join(out, name))), None)
    if missing:
        print(f"cpu_bound.py: error: {missing} (give folders measure_grid.py wrote)", file=sys.stderr)
        sys.exit(2)


def main(outs: list[str]) -> None:
    check(outs)
    print("| grid | case | W | CPU per example (ms) | bound from the smallest W | fine | measured |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for out in outs:
        for grid, case, w, c_ms, bound, f, x in rows(out):
            fine = f"{f:.1f}" if f is not None else "-"
            print(f"| {grid} | {case} | {w} | {c_ms:.2f} | {bound:.0f} | {fine} | {x:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
