"""Grids whose element-wise rows tie a gradient flag at 0 with another mode value, found from
the sampler alone (nothing is timed): a row's backward is taken as 0 s exactly when it has no
gradient or is a mask, as measured rows have it. For each seed where the estimator's modes with
no backward (``zero_bwd_modes``) differ from the first rule's (every value all of whose rows
have no backward, but for one whose rows are a strict part of another's), the seed and both.

    python examples/ops/zero_backward_ties.py FIRST LAST [--samples 10]
"""
from __future__ import annotations

import argparse

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.collect import grid_calls
from sgdsim.ops.estimator.features import layout_of
from sgdsim.ops.estimator.zero_backward import zero_bwd_modes
from sgdsim.ops.optypes.pointwise import MASKS
from sgdsim.ops.records import Device, OpRecord

DEVICE = Device("cpu (sampler only)", "cpu")


def first_rule(records, layout) -> set:
    """The rule before the tie-break (its parent commit), kept here to compare against."""
    found = {}
    for name, values in layout.modes:
        for v in values:
            rows = frozenset(i for i, r in enumerate(records) if str(r.params[name]) == v)
            if rows and len(rows) < len(records) and all(records[i].bwd_s == 0 for i in rows):
                found[(name, v)] = rows
    return {k for k, rows in found.items() if not any(rows < other for other in found.values())}


def sampled_rows(seed: int, samples: int) -> list[OpRecord]:
    def bwd_s(p):
        return 0.0 if not int(p["gi"]) or p["fn"] in MASKS else 2e-5
    return [OpRecord(DEVICE, "eltwise", p, "float32", 1e-5, bwd_s(p), 5, 0.0, 0.0, 1.0)
            for _, p, _ in grid_calls(["eltwise"], samples, seed)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=int, help="first seed")
    ap.add_argument("last", type=int, help="last seed (included)")
    ap.add_argument("--samples", type=int, default=10, help="eltwise rows a grid (default 10)")
    args = ap.parse_args()
    if args.last < args.first or args.samples < 2:
        raise ConfigError(f"seeds {args.first}-{args.last} with {args.samples} samples: "
                          "need FIRST <= LAST and --samples >= 2")
    for seed in range(args.first, args.last + 1):
        rows = sampled_rows(seed, args.samples)
        layout = layout_of([r.params for r in rows], {"numel"})
        old, new = first_rule(rows, layout), set(zero_bwd_modes(rows, layout))
        if old != new:
            print(seed, " ".join(f"{n}={v}" for n, v in sorted(old)), "->",
                  " ".join(f"{n}={v}" for n, v in sorted(new)))


if __name__ == "__main__":
    run_main(main)
