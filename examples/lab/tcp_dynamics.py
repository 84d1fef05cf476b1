"""Replay validation grids with the measured TCP dynamics on (``tcp_dynamics = true``).

Every async PS case of one server takes its hardware file's late-comer boost (join_boost,
join_after_s: examples/lab/joiner.py) and share spread (share_cv: netbench --fanout); the
other cases replay unchanged. Same lab measurements, same profiles: only the model changes.

    python examples/lab/tcp_dynamics.py -o /tmp/dyn async cnn allreduce 2ps widecnn
    python examples/lab/validation_table.py /tmp/dyn/{async,cnn,allreduce,2ps,widecnn}/points.csv
"""
from __future__ import annotations

import argparse
import dataclasses
import os

from sgdsim.validate.cli import _saved_profiles
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import measured_from_csv, run_validation


def with_dynamics(grid):
    cases = tuple(dataclasses.replace(c, tcp_dynamics=True)
                  if (c.arch, c.mode, c.ps_count) == ("ps", "async", 1) and c.hardware_spec is not None
                  and c.hardware_spec.join_boost is not None else c for c in grid.cases)
    return dataclasses.replace(grid, cases=cases)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+", help="names G of examples/grids/lab-G.toml with docs/validation/G/")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    for name in args.grids:
        points = f"docs/validation/{name}/points.csv"
        grid = with_dynamics(load_grid(f"examples/grids/lab-{name}.toml"))
        measure_fn, lab_fn = measured_from_csv(points, grid)
        run_validation(grid, os.path.join(args.output, name), force=True, log=lambda *a: None,
                       profile_fn=_saved_profiles(points), measure_fn=measure_fn, lab_fn=lab_fn)


if __name__ == "__main__":
    main()
