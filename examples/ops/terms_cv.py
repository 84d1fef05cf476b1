"""The physical-terms prior alone, no network correcting it: per operator type with terms
(``OpType.prior_terms``) and per grid, the 4-fold held-out median |error| of the forward and
of the backward time (the folds of ``prior_cv.py``: the same seed, the same rows held out).
A column per database, so that a change to the terms is judged on every committed grid at
once; run it at two commits to compare them (docs/ops-runs.md).

    sgdsim ops import docs/validation/ops/db-grid-epyc-2026-12-02-run11.csv --db run11.sqlite
    python examples/ops/terms_cv.py run11.sqlite [more.sqlite ...] [--ops bmm,mm] [--seed 0] [--seeds 1] [--support 5]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from prior_cv import load_groups, override_support  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError
from sgdsim.ops.estimator.prior import held_out_times
from sgdsim.ops.estimator.terms import has_terms

FOLDS = 4


def signed_errors(recs, seed: int) -> np.ndarray:
    """(n, 2): predicted / measured - 1 of each row's forward and backward, every row held out
    once; NaN where the direction was not timed (0, or a backward stored as a bound)."""
    fold = np.random.default_rng(seed).permutation(len(recs)) % FOLDS
    return errors_against(recs, held_out_times(recs, True, fold))


def errors_against(recs, got: np.ndarray) -> np.ndarray:
    """(n, 2): ``got`` (each row's forward and backward seconds) / measured - 1; NaN where the
    direction was not timed."""
    want = np.array([[r.fwd_s, 0.0 if r.bwd_bound else r.bwd_s] for r in recs]).reshape(-1, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(want > 0, got / want - 1, np.nan)


def row_errors(recs, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """|predicted / measured - 1| of each row's forward and of each timed backward."""
    err = signed_errors(recs, seed)
    return tuple(np.abs(err[~np.isnan(err[:, j]), j]) for j in range(2))


def held_out_errors(recs, seed: int, seeds: int = 1) -> tuple[float, float]:
    """The medians of ``row_errors``, the forward's and the timed backwards', each the mean
    over ``seeds`` fold assignments from ``seed`` on (one grid's median moves by a point or
    two with the rows its folds hold out together)."""
    out = []
    for s in range(seed, seed + seeds):
        fwd, bwd = row_errors(recs, s)
        out.append((float(np.median(fwd)), float(np.median(bwd)) if bwd.size else float("nan")))
    return tuple(float(v) for v in np.mean(out, axis=0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dbs", nargs="+")
    ap.add_argument("--ops", default=None, help="comma list of operator types (default: all with terms)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=1,
                    help="fold assignments to average each median over, from --seed on")
    ap.add_argument("--support", type=int, default=None,
                    help="rows every type's rate needs, in place of each type's own (a comparison)")
    args = ap.parse_args()
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds}: at least 1 fold assignment")
    override_support(args.support)
    grids = [load_groups(path)[1] for path in args.dbs]
    wanted = None if args.ops is None else set(args.ops.split(","))
    kinds = sorted({k for g in grids for k in g if has_terms(k[0]) and (wanted is None or k[0] in wanted)})
    mean = len(args.dbs) > 1
    print("| operator | " + " | ".join(f"{os.path.basename(p)}: forward / backward" for p in args.dbs)
          + (" | mean of the grids |" if mean else " |"))
    print("|---|" + "---:|" * (len(args.dbs) + mean))
    for kind in kinds:
        errs = [held_out_errors(g[kind], args.seed, args.seeds) if len(g.get(kind, [])) >= 20 else None
                for g in grids]
        cells = ["{:.1%} / {:.1%}".format(*e) if e else "-" for e in errs]
        if mean:
            got = [e for e in errs if e]
            cells.append("{:.1%} / {:.1%}".format(*np.mean(got, axis=0)) if len(got) == len(errs) else "-")
        print(f"| {kind[0]} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    run_main(main, "DB [DB ...] [--ops bmm,mm] [--seed 0] [--seeds 1]", at_least=1)
