"""Replay validation grids with the measured TCP dynamics off (``tcp_dynamics = false``).

By default every async PS case of one server takes its hardware file's late-comer boosts
(join_boost, join_after_s and the push pair: examples/lab/joiner.py) and share spread
(share_cv: netbench --fanout). This replays the same lab measurements with the same profiles
and equal shares instead, to compare (docs/validation/regimes/, finding 5).

    python examples/lab/tcp_dynamics.py --off -o /tmp/off async cnn allreduce 2ps widecnn
    python examples/lab/validation_table.py /tmp/off/{async,cnn,allreduce,2ps,widecnn}/points.csv
"""
from __future__ import annotations

import argparse
import dataclasses
import os

from sgdsim.validate.cli import _saved_profiles
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import measured_from_csv, run_validation


def with_dynamics(grid, on: bool):
    return dataclasses.replace(grid, cases=tuple(dataclasses.replace(c, tcp_dynamics=on) for c in grid.cases))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+", help="names G of examples/grids/lab-G.toml with docs/validation/G/")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--off", action="store_true", help="equal shares (else the default, on)")
    args = ap.parse_args()
    for name in args.grids:
        points = f"docs/validation/{name}/points.csv"
        grid = with_dynamics(load_grid(f"examples/grids/lab-{name}.toml"), not args.off)
        measure_fn, lab_fn = measured_from_csv(points, grid)
        run_validation(grid, os.path.join(args.output, name), force=True, log=lambda *a: None,
                       profile_fn=_saved_profiles(points), measure_fn=measure_fn, lab_fn=lab_fn)


if __name__ == "__main__":
    main()
