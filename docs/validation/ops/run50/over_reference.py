"""A copy of a models database whose rows read at a grid's reference level, so that
``examples/ops/model_calls.py`` on the copy judges the estimator "over the reference" (the
machine's speed while the grid was measured, not while the calls were).

A row is read at its own database's mean reference (``reference.steady``); here at the
grid's mean reference of its type and dtype instead (the models' own where the grid has
none), and stored with no reference, so that it is read as stored.

    python docs/validation/ops/run50/over_reference.py GRID.sqlite MODELS.sqlite OUT.sqlite
"""
from __future__ import annotations

import dataclasses
import os
import sys

from sgdsim.errors import SgdsimError
from sgdsim.ops import reference
from sgdsim.ops.db import open_db


def grid_level(models_rows, grid_rows) -> dict:
    """{(device, op, dtype): (forward, backward) mean reference}: the grid's, direction by
    direction, else the models' own."""
    own, grid = reference.means(models_rows), reference.means(grid_rows)
    return {k: tuple(g or m for g, m in zip(grid.get(k, (0.0, 0.0)), v)) for k, v in own.items()}


def fail(line: str) -> None:
    print(line, file=sys.stderr)
    sys.exit(2)


def main() -> None:
    if len(sys.argv) != 4:
        fail("usage: python over_reference.py GRID.sqlite MODELS.sqlite OUT.sqlite")
    grid_path, models_path, out = sys.argv[1:]
    if os.path.exists(out):
        fail(f"over_reference.py: {out} exists")
    with open_db(grid_path, create=False) as grid, open_db(models_path, create=False) as models:
        raw = models.load(raw=True)
        level = grid_level(raw, grid.load(raw=True))
    rows = [dataclasses.replace(r, fwd_ref_s=0.0, bwd_ref_s=0.0) for r in reference.steady(raw, level)]
    with open_db(out) as db:
        db.upsert(rows)


if __name__ == "__main__":
    try:
        main()
    except SgdsimError as exc:  # a database that is not there: one line
        fail(f"over_reference.py: {exc}")
