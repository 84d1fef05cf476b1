"""What a grid's rows of one function are worth: the models' calls of that function (an
element-wise type's ``fn``, dropout's mask ``bernoulli_`` say), estimated by the type's
physical terms fitted on the grid with those rows and without them; and the type's calls
altogether, forward and backward sums, estimated over measured. Nothing is timed.

    python examples/ops/without_rows.py MODELS.sqlite GRID.sqlite [--op eltwise] [--fn bernoulli_]
"""
from __future__ import annotations

import argparse

import numpy as np

from prior_cv import terms_estimates, type_rows  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models")
    ap.add_argument("grid")
    ap.add_argument("--op", default="eltwise")
    ap.add_argument("--fn", default="bernoulli_")
    args = ap.parse_args()
    grid, calls = type_rows(args.grid, args.op), type_rows(args.models, args.op)
    is_fn = np.array([c.params.get("fn") == args.fn for c in calls])
    picked = [c for c, yes in zip(calls, is_fn) if yes]
    in_grid = sum(r.params.get("fn") == args.fn for r in grid)
    if not picked or not in_grid:
        raise ConfigError(f"{args.op} calls of {args.fn!r} are needed in both databases "
                          f"({len(picked)} in the models', {in_grid} in the grid's)")
    want = np.array([c.fwd_s for c in picked])
    wf, wb = np.array([c.fwd_s for c in calls]), np.array([c.bwd_s for c in calls])
    timed = wb > 0
    print(f"grid: {len(grid)} {args.op} rows, {in_grid} of "
          f"them {args.fn}; the models: {len(calls)} {args.op} calls, {len(picked)} of them {args.fn}")
    for name, rows in (("with its rows", grid), ("less its rows", [r for r in grid if r.params.get("fn") != args.fn])):
        every = terms_estimates(rows, calls)
        got = every[is_fn, 0]
        print(f"{name}: {args.fn} median |error| {np.median(np.abs(got / want - 1)):.1%}, each "
              + ", ".join(f"{c.params.get('numel', '?')}: {g / w:.2f}x" for c, g, w in zip(picked, got, want))
              + f"; every {args.op} call's forward sum {every[:, 0].sum() / wf.sum():.2f}x, backward "
              f"{every[timed, 1].sum() / wb[timed].sum():.2f}x")


if __name__ == "__main__":
    run_main(main, "MODELS.sqlite GRID.sqlite [--op eltwise] [--fn bernoulli_]", at_least=2)
