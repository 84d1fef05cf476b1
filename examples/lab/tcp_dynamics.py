"""Replay validation grids with other TCP dynamics than the default's.

By default every async PS case of one server takes its hardware file's late-comer boosts
(join_boost, join_after_s: netbench --lab --joiner; their onset join_delay_s:
examples/lab/incumbent.py ramp; and the push pairs) with the share spread (share_cv: netbench
--fanout). ``--stalls`` adds the stalls (stall_*: examples/lab/incumbent.py;
``tcp_dynamics = true``), ``--off`` drops them all (equal shares; ``tcp_dynamics = false``).
Same lab measurements, same profiles: only the model changes (docs/validation/regimes/,
findings 5, 6 and 8). ``--boosts`` and ``--set FIELD=VALUE`` replace the files' measured
values (to compare fits).

    python examples/lab/tcp_dynamics.py -o /tmp/dyn --off async cnn allreduce 2ps widecnn
    python examples/lab/validation_table.py /tmp/dyn/{async,cnn,allreduce,2ps,widecnn}/points.csv
"""
from __future__ import annotations

import argparse
import dataclasses
import os

from sgdsim.validate.cli import replay
from sgdsim.validate.grid import load_grid


def with_dynamics(grid, dynamics: bool | None):
    return dataclasses.replace(grid, cases=tuple(dataclasses.replace(c, tcp_dynamics=dynamics)
                                                 for c in grid.cases))


def field_value(text: str):
    """A --set value: none, a number, or numbers by flow count (two_way_busy=0.81,0.74)."""
    if text == "none":
        return None
    return tuple(float(x) for x in text.split(",")) if "," in text else float(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+", help="names G of examples/grids/lab-G.toml with docs/validation/G/")
    ap.add_argument("-o", "--output", required=True)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--off", action="store_true", help="equal shares, no stalls")
    which.add_argument("--stalls", action="store_true", help="the default's dynamics and the stalls")
    ap.add_argument("--boosts", default=None, metavar="K,A,K_PUSH,A_PUSH",
                    help="these join boosts and ages (s) instead of the hardware files'")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="replace a hardware field in every case (e.g. stall_prob=0, join_boost=1; "
                         "none: as if not measured, e.g. two_way_joined_draws=none; by flow count: "
                         "two_way_busy=0.81,0.74; only some models' cases: "
                         "join_boost=1.15@lab:cnn-10mb+lab:mlp-10mb)")
    args = ap.parse_args()
    for name in args.grids:
        points = f"docs/validation/{name}/points.csv"
        grid = with_dynamics(load_grid(f"examples/grids/lab-{name}.toml"),
                             False if args.off else True if args.stalls else None)
        if args.boosts:
            k, a, kp, ap_ = (float(x) for x in args.boosts.split(","))
            grid = dataclasses.replace(grid, cases=tuple(
                dataclasses.replace(c, hardware_spec=dataclasses.replace(
                    c.hardware_spec, join_boost=k, join_after_s=a, join_boost_push=kp, join_after_push_s=ap_))
                if c.hardware_spec is not None else c for c in grid.cases))
        for field, rest in (s.split("=", 1) for s in args.set):
            value, _, only = rest.partition("@")  # FIELD=VALUE@MODEL+MODEL: those models' cases
            grid = dataclasses.replace(grid, cases=tuple(
                dataclasses.replace(c, hardware_spec=dataclasses.replace(
                    c.hardware_spec, **{field: field_value(value)}))
                if c.hardware_spec is not None and (not only or c.model in only.split("+")) else c
                for c in grid.cases))
        replay(grid, points, os.path.join(args.output, name))


if __name__ == "__main__":
    main()
