"""The coarse async model with and without its saturated links, on every measured async grid.

Replays the committed runs (``sgdsim validate GRID --measured POINTS.csv --models coarse``,
calibrated as each grid says) twice: with TPDS Eqs. 1-6 as published (``eq5_sweep``) and with
the model as it is (``async_ps_sweep``: from K >= N* + 1 the saturated links' rate, linear from
Eq. 5 between N* and N* + 1; analytic/saturation.py). Prints the error of every async check and
a summary by worker count and by trainer: the project's lab trainer (whose runs the two-way
busy shares were measured on) and the held-out torch trainer. The torch-e grid was measured
after the rule was committed (examples/grids/lab-torch-e.toml).

    python examples/lab/coarse_saturation.py      # ~60 s; prints markdown
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import tempfile
from unittest import mock

import sgdsim.analytic.models as analytic_models
from sgdsim.analytic.async_ps import async_ps_sweep, eq5_sweep
from sgdsim.validate.cli import replay
from sgdsim.validate.grid import load_grid

LAB = ("async", "cnn", "widecnn", "2ps", "second-w2", "heldout-margin", "heldout200", "heldout200b",
       "heldout200c", "heldout200d", "heldout200e")
TORCH = ("torch", "torch-b", "torch-c", "torch-d")
AFTER = ("torch-e",)  # measured after the rule was committed
VARIANTS = (("Eq. 5 as published", eq5_sweep), ("with saturated links", async_ps_sweep))


def checks(folder: str, sweep, tmp: str) -> list[tuple[str, int, float]]:
    """(case, workers, error %) of every async coarse check of one grid's committed runs."""
    points = f"docs/validation/{folder}/points.csv"
    with mock.patch.object(analytic_models, "async_ps_sweep", sweep), \
            contextlib.redirect_stderr(io.StringIO()):
        result = replay(load_grid(f"examples/grids/lab-{folder}.toml"), points,
                        os.path.join(tmp, folder), models=("coarse",))
    return [(cr.case.name, p.workers, 100 * (p.predicted / p.measured - 1))
            for cr in result.cases if cr.case.mode == "async"
            for p in cr.points if p.model == "coarse" and p.measured and not p.fitted]


def summary(errors: list[float]) -> str:
    if not errors:
        return "- | - | - | 0"
    return (f"{statistics.fmean(abs(e) for e in errors):.1f} % | {max(abs(e) for e in errors):.1f} % | "
            f"{statistics.fmean(errors):+.1f} % | {len(errors)}")


def main() -> int:
    if len(sys.argv) > 1:
        print("usage: python examples/lab/coarse_saturation.py (no arguments)", file=sys.stderr)
        return 2
    grids = [g for g in LAB + TORCH + AFTER if os.path.exists(f"docs/validation/{g}/points.csv")]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {name: {g: checks(g, sweep, os.path.join(tmp, str(i))) for g in grids}
                for i, (name, sweep) in enumerate(VARIANTS)}
    before, after = (runs[name] for name, _ in VARIANTS)
    print("| grid | case | W | Eq. 5 as published | with saturated links |\n|---|---|---:|---:|---:|")
    for g in grids:
        for (case, w, e0), (_, _, e1) in zip(before[g], after[g]):
            print(f"| {g} | {case} | {w} | {e0:+.1f} % | {e1:+.1f} % |")
    groups = (("lab trainer", LAB), ("torch trainer, four grids", TORCH),
              ("torch trainer, fifth grid (after the rule)", AFTER))
    print("\n| runs | W | model | mean abs. error | max | signed mean | checks |\n|---|---|---|---:|---:|---:|---:|")
    for label, names in groups:
        for wlabel, keep in (("2", lambda w: w == 2), ("3-8", lambda w: w >= 3)):
            for name, _ in VARIANTS:
                errs = [e for g in grids if g in names for _, w, e in runs[name][g] if keep(w)]
                print(f"| {label} | {wlabel} | {name} | {summary(errs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
