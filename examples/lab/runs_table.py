"""Per point of a measured grid: throughput, each model's error, and where the CPU went.

Reads OUT/points.csv and OUT/runs.jsonl (examples/lab/measure_grid.py); the PS's CPU is its
CPU seconds over the run (one core = 100 %), the machine's all processes' over both cores.

    python examples/lab/runs_table.py docs/validation/torch
"""
from __future__ import annotations

import collections
import csv
import json
import os
import sys


def main(out: str) -> None:
    pts: dict = collections.defaultdict(dict)
    for r in csv.DictReader(open(os.path.join(out, "points.csv"), encoding="utf-8")):
        if r["measured"]:
            pts[(r["case"], int(r["workers"]))][r["model"]] = (float(r["measured"]), float(r["predicted"]),
                                                               r["fitted"] == "1")
    print("| case | W | measured | fine | fine error | coarse error | PS CPU (of a core) "
          "| machine CPU (of 2 cores) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for line in open(os.path.join(out, "runs.jsonl"), encoding="utf-8"):
        d = json.loads(line)
        got = pts[(d["case"], d["workers"])]
        (x, f, fit), c = got["fine"], got["coarse"]
        tag = " (fit)" if fit else ""
        ps = f"{d['cpu_s'][0] / d['duration_s']:.0%}" if d["arch"] == "ps" else "-"
        print(f"| {d['case']} | {d['workers']} | {x:.2f} | {f:.2f} | {(f / x - 1) * 100:+.1f} %{tag} | "
              f"{(c[1] / c[0] - 1) * 100:+.1f} %{tag} | {ps} | "
              f"{sum(d['cpu_s']) / d['duration_s'] / 2:.0%} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python examples/lab/runs_table.py DIR (a folder measure_grid.py wrote)", file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1])
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as exc:
        print(f"runs_table.py: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
