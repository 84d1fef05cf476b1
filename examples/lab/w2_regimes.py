"""The simulator's two regimes at an async two-worker point beside the real runs of it.

For each GRID:CASE, the case is calibrated on its committed one-worker run (as ``sgdsim
validate`` does), the fine model predicts W = 2 with the case's replications, and the
simulated runs' regimes (``sim/regimes.py``: the two groups' means and shares, where they split)
are printed beside every real W = 2 run: the committed ones and those of RUNS.csv
(``more_runs.py``), each put in the regime nearer to it. Where the simulated runs do not split,
their spread (the one-run 95 % interval, and their range from the stopping note) is shown.

    python examples/lab/w2_regimes.py docs/validation/torch-repeats-w2/runs.csv \
        torch-b:torch-mlp5-ps-async-200 torch-b:torch-cnn4-ps-async-100 \
        torch-c:torch-mlp3-b32-ps-async-100 torch-c:torch-cnn6-b8-ps-async-100
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from sgdsim.errors import SgdsimError
from sgdsim.predict import predict
from sgdsim.profile.io import load_profile
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import calibrated_hardware, pooled_runs

W = 2


def runs_of(grid: str, extra: str) -> dict[tuple[str, int], list[float]]:
    """{(case, workers): runs} of the grid's committed points, then RUNS.csv's, pooled as
    ``sgdsim validate --measured A --measured B`` pools them."""
    return pooled_runs([f"docs/validation/{grid}/points.csv", extra])


def simulated(grid: str, case_name: str, runs: dict[int, list[float]]):
    case = next(c for c in load_grid(f"examples/grids/lab-{grid}.toml").cases if c.name == case_name)
    profile = load_profile(f"docs/validation/{grid}/profiles/{case_name}.json")
    _, hw = calibrated_hardware(case, profile, runs)  # W = 1: RUNS.csv has none
    case = dataclasses.replace(case, hardware_spec=hw, predict_bandwidth_bps=None)
    return predict(profile, workers=[W], **{**case.network(), "model_error": 0.0, "fit_uncertainty": 0.0},
                   mode=case.mode, arch=case.arch, sharing=case.sharing,
                   replications=case.replications)[0]


def _fail(text: str) -> None:
    print(f"{os.path.basename(sys.argv[0])}: error: {text}", file=sys.stderr)
    sys.exit(2)


def check(points: list[str]) -> None:
    """One line and exit code 2 for a point that is not there."""
    for spec in points:
        grid, _, case = spec.partition(":")
        path = f"examples/grids/lab-{grid}.toml"
        if not case or not os.path.isfile(path):
            _fail(f"{spec!r}: use GRID:CASE with examples/grids/lab-GRID.toml")
        if case not in {c.name for c in load_grid(path).cases}:
            _fail(f"{spec!r}: {path} has no case {case!r}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", help="more_runs.py's output")
    ap.add_argument("points", nargs="+", help="GRID:CASE")
    args = ap.parse_args(argv)
    check(args.points)
    try:
        pooled = {grid: runs_of(grid, args.runs) for grid in {p.split(":")[0] for p in args.points}}
    except SgdsimError as exc:
        _fail(str(exc))
    print("| point | simulated mean | simulated regimes (examples/s, share), or spread | real runs (committed first) "
          "| real mean | real runs nearer the slow / fast regime |")
    print("|---|---:|---|---|---:|---:|")
    for spec in args.points:
        grid, case = spec.split(":")
        runs = {w: got for (c, w), got in pooled[grid].items() if c == case}
        pt = simulated(grid, case, runs)
        real = runs[W]
        modes = tuple(pt.regimes or ())
        if modes:
            lo, hi = modes
            text = f"{lo.throughput:.2f} ({lo.share:.0%}), {hi.throughput:.2f} ({hi.share:.0%})"
            slow = sum(abs(x - lo.throughput) < abs(x - hi.throughput) for x in real)
            split = f"{slow} / {len(real) - slow}"
        else:
            runs = pt.regime.split("runs from ")[-1].split(",")[0] if "runs from" in pt.regime else ""
            text = f"no split; one run within [{pt.ci_low:.2f}, {pt.ci_high:.2f}]" + (
                f", runs {runs}" if runs else "")
            split = "-"
        print(f"| {grid}: {case} | {pt.throughput:.2f} | {text} | "
              f"{', '.join(f'{x:.2f}' for x in real)} | {sum(real) / len(real):.2f} | {split} |")


if __name__ == "__main__":
    main()
