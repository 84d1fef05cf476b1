"""Where two async workers sit, quarter by quarter of a run, in runs files of async_regimes.py
(docs/validation/torch-stagger-w2/): per run, its throughput and the mean folded phase of
worker 1's step ends within worker 0's steps (0 lock-step, 0.5 interleaved) in the warm-up and
in each quarter of the measured window.

    python examples/lab/stagger_phases.py docs/validation/torch-stagger-w2/*.json
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from sgdsim.validate.regimes import folded, phase_steps

QUARTERS = 4


def spans(run: dict) -> list[tuple[float, float]]:
    """The warm-up, then the measured window's quarters (s from the start)."""
    start, end = run["duration_s"] - run["window_s"], run["duration_s"]
    edges = np.linspace(start, end, QUARTERS + 1)
    return [(0.0, start), *zip(edges[:-1], edges[1:])]


def phase_means(run: dict) -> list[float]:
    a, b = (np.asarray(t, float) for t in run["step_times_s"])
    out = []
    for lo, hi in spans(run):  # worker 1's step ends in the span, placed in all of worker 0's steps
        inside = folded(phase_steps(a, b[(b >= lo) & (b < hi)])[0])
        out.append(float(inside.mean()) if len(inside) else float("nan"))
    return out


def main(paths: list[str]) -> None:
    print("| file | throughput | warm-up | " + " | ".join(f"quarter {k + 1}" for k in range(QUARTERS)) + " |")
    print("|---|---:|---:|" + "---:|" * QUARTERS)
    for path in paths:
        with open(path, encoding="utf-8") as f:
            runs = json.load(f)["runs"]
        for run in runs:
            if run["workers"] != 2:
                continue
            cells = " | ".join(f"{x:.2f}" for x in phase_means(run))
            print(f"| {os.path.basename(path)} | {run['throughput_intervals']:.2f} | {cells} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python examples/lab/stagger_phases.py RUNS.json [...]", file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1:])
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"stagger_phases.py: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        sys.exit(2)
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        print(f"stagger_phases.py: error: not a runs file of async_regimes.py ({exc})", file=sys.stderr)
        sys.exit(2)
