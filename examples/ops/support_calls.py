"""The models' own calls, estimated by each type's physical terms fitted on a grid, at several
values of the rows a rate needs (``OpType.min_support``, every type alike): per operator type
with terms and per grid, the median |log(estimated / measured)| of the calls' forward times
and their sum, estimated over measured. Nothing is timed: the grids and the calls are
databases already measured (``sgdsim ops measure --grid ...`` and ``--model ...``).

``--sample N`` reads each grid as N-row draws from it instead (``--draws`` of them, seeded),
the way a grid of N shapes a type would come out: a committed 100-row grid stands for many
small ones (docs/ops-runs.md, run 21).

    python examples/ops/support_calls.py MODELS.sqlite GRID.sqlite [GRID ...] [--support 5,3]
        [--sample 10 --draws 40]
"""
from __future__ import annotations

import argparse

import numpy as np

from prior_cv import load_groups, override_support, terms_estimates  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError
from sgdsim.ops.estimator import terms
from sgdsim.ops.optypes import REGISTRY


def call_errors(grid_rows, calls) -> tuple[float, float]:
    """(median |log| of the calls' forward, log of their sum estimated / measured) from the
    type's terms fitted on ``grid_rows``."""
    want = np.array([c.fwd_s for c in calls])
    est = terms_estimates(grid_rows, calls) if (want > 0).all() else None
    if est is None:
        return float("nan"), float("nan")
    got = est[:, 0]
    return float(np.median(np.abs(np.log(got / want)))), float(np.log(got.sum() / want.sum()))


def cell(rows, calls, sample: int | None, draws: int) -> str:
    if sample is None:
        med, total = call_errors(rows, calls)
        return f"{med:.2f} ({np.exp(total):.2f}x)"
    if len(rows) < sample:
        return "-"
    rng = np.random.default_rng(0)
    got = np.array([call_errors([rows[i] for i in rng.choice(len(rows), sample, replace=False)], calls)
                    for _ in range(draws)])
    return f"{np.nanmedian(got[:, 0]):.2f} ({np.exp(np.nanmedian(got[:, 1])):.2f}x)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models")
    ap.add_argument("grids", nargs="+")
    ap.add_argument("--support", default="5,3", help="comma list of rows a rate needs, every type alike")
    ap.add_argument("--sample", type=int, default=None, help="read each grid as draws of N rows a type")
    ap.add_argument("--draws", type=int, default=40)
    args = ap.parse_args()
    try:
        supports = [int(s) for s in args.support.split(",")]
    except ValueError:
        raise ConfigError(f"--support is a comma list of whole numbers, got {args.support!r}") from None
    if min(supports) < 1 or (args.sample is not None and args.sample < 2) or args.draws < 1:
        raise ConfigError("--support values are at least 1, --sample at least 2, --draws at least 1")
    models = load_groups(args.models)[1]
    grids = [load_groups(path)[1] for path in args.grids]
    kinds = sorted(k for k in models if terms.has_terms(k[0]) and any(k in g for g in grids))
    if not kinds:
        raise ConfigError("no operator type with terms is in both the models' database and a grid")
    print("| operator | calls | " + " | ".join(f"{path}, support {s}" for path in args.grids for s in supports)
          + " |")
    print("|---|---:|" + "---:|" * (len(grids) * len(supports)))
    own = dict(REGISTRY)
    try:
        for kind in kinds:
            cells = []
            for g in grids:
                for s in supports:
                    override_support(s)  # every type, its own number (eltwise's 3) included
                    cells.append(cell(g[kind], models[kind], args.sample, args.draws) if kind in g else "-")
            print(f"| {kind[0]} | {len(models[kind])} | " + " | ".join(cells) + " |", flush=True)
    finally:
        REGISTRY.update(own)


if __name__ == "__main__":
    run_main(main, "MODELS.sqlite GRID.sqlite [GRID ...] [--support 5,3] [--sample 10 --draws 40]",
             at_least=2)
