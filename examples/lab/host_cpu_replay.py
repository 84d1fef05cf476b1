"""Replay the held-out trainer family (and the lab trainer's grids) with a host CPU per byte.

The lab's runs record each process's CPU seconds (docs/validation/torch/runs.jsonl): beyond
its computation, a one-worker (two-rank) run spends about 3-4 ns of CPU per byte it sends or
receives, at the worker and at the PS alike. This puts that cost into every hardware file
(``tcp_cpu_s_per_byte``, docs/hosts.md) and replays the committed runs, calibration included,
to see whether the models gain from it on runs they were not fitted on.

    python examples/lab/host_cpu_replay.py 3.4e-9 [--fitted]     # ~1 min (+2 with --fitted)
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import knob_ablation  # noqa: E402  (the replay and the table line)


def with_cost(grid, changes: dict):
    cases = [dataclasses.replace(c, hardware_spec=dataclasses.replace(c.hardware_spec, **changes)
                                 if c.hardware_spec is not None else None) for c in grid.cases]
    return dataclasses.replace(grid, cases=tuple(cases))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tcp_cpu", type=float, help="seconds of CPU per byte sent or received")
    ap.add_argument("--fitted", action="store_true", help="also the lab trainer's grids")
    args = ap.parse_args()
    changes = {"tcp_cpu_s_per_byte": args.tcp_cpu, "transport": "tcp"}
    with tempfile.TemporaryDirectory() as tmp:
        rows = knob_ablation.errors(knob_ablation.HELD_OUT, changes, os.path.join(tmp, "h"), with_cost)
        print("held-out trainer: mean |err| | signed | worst | interval holds:", knob_ablation.line(rows))
        for name in knob_ablation.HELD_OUT:
            for r in csv.DictReader(open(os.path.join(tmp, "h", name, "points.csv"), encoding="utf-8")):
                if r["model"] == "fine" and r["measured"] and r["fitted"] != "1":
                    print(f"  {r['case']} W={r['workers']}: {float(r['error_pct']):+.1f} %")
        if args.fitted:
            rows = knob_ablation.errors(knob_ablation.FITTED, changes, os.path.join(tmp, "f"), with_cost)
            print("lab trainer (fitted):", knob_ablation.line(rows))


if __name__ == "__main__":
    main()
