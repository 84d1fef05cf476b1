"""The models' element-wise calls by kind: per (function, in place, needs a gradient) group,
their measured forward time and, from each grid's physical terms, the group's sum estimated
over measured and its median |error|. Which kind of call a grid leaves badly estimated (the
optimizer's in-place update, say) is what a change to the grid's draw is judged by. Nothing
is timed.

    python examples/ops/call_groups.py MODELS.sqlite GRID.sqlite [GRID ...] [--op eltwise] [--support 5]
"""
from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from prior_cv import override_support, terms_estimates, type_rows  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError


def group_of(params: dict) -> str:
    return f"{params.get('fn', '-')}, in place {params.get('inplace', 0)}, gradient {params.get('gi', 0)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models")
    ap.add_argument("grids", nargs="+")
    ap.add_argument("--op", default="eltwise")
    ap.add_argument("--support", type=int, default=None,
                    help="rows every type's rate needs, in place of each type's own (a comparison)")
    args = ap.parse_args()
    override_support(args.support)
    calls = type_rows(args.models, args.op)
    grids = [type_rows(path, args.op) for path in args.grids]
    if not calls or not all(grids):
        raise ConfigError(f"{args.op} rows are needed in the models' database and in every grid")
    want = np.array([c.fwd_s for c in calls])
    got = [terms_estimates(g, calls)[:, 0] for g in grids]
    members: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(calls):
        members[group_of(c.params)].append(i)
    print("| calls | n | measured ms | " + " | ".join(f"{p}: sum est/meas, median \\|error\\|" for p in args.grids) + " |")
    print("|---|---:|---:|" + "---:|" * len(grids))
    for name, idx in sorted(members.items(), key=lambda kv: -want[kv[1]].sum()):
        cells = [f"{e[idx].sum() / want[idx].sum():.2f}x, {np.median(np.abs(e[idx] / want[idx] - 1)):.1%}" for e in got]
        print(f"| {name} | {len(idx)} | {want[idx].sum() * 1e3:.2f} | " + " | ".join(cells) + " |")
    cells = [f"{e.sum() / want.sum():.2f}x, {np.median(np.abs(e / want - 1)):.1%}" for e in got]
    print(f"| **all** | {len(calls)} | {want.sum() * 1e3:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run_main(main, "MODELS.sqlite GRID.sqlite [GRID ...] [--op eltwise]", at_least=2)
