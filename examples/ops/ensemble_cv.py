"""Would averaging the estimator with and without its roofline prior beat choosing one?
(issue 38, item 3; tried, not adopted). Per operator type, k-fold as ``prior_cv.py``: both
models are trained on half the budget each with the same generator (so the same validation
split); "auto" keeps the one with the lower validation error, as ``ops train --prior auto``
does; "ensemble" predicts the geometric mean of the two. Forward-time |error| of held-out rows.

    python examples/ops/ensemble_cv.py DB [--budget 5] [--folds 4] [--seed 0]
"""
from __future__ import annotations

import copy

import numpy as np
from prior_cv import cv_arguments, load_groups  # beside this script
from run_main import run_main

from sgdsim.ops.estimator.model import train
from sgdsim.ops.optypes import REGISTRY


def fold_errors(recs, op: str, k: int, fold, seed: int, budget: float):
    """(auto, ensemble) relative errors of fold k's held-out rows."""
    fit = [r for r, f in zip(recs, fold) if f != k]
    test = [r for r, f in zip(recs, fold) if f == k]
    rng = np.random.default_rng([seed, k])
    ests = [train(fit, REGISTRY[op].shape_dims, copy.deepcopy(rng), budget / 2, use_prior=prior,
                  clock_stop=False) for prior in (False, True)]
    true = np.array([r.fwd_s for r in test])
    preds = [e.predict([r.params for r in test])[0] for e in ests]
    best = min(range(2), key=lambda i: ests[i].stats["validation_error"])
    ensemble = np.exp((np.log(preds[0]) + np.log(preds[1])) / 2)
    return np.abs(preds[best] / true - 1), np.abs(ensemble / true - 1)


def main() -> None:
    args = cv_arguments(__doc__.splitlines()[0])
    _, groups, _ = load_groups(args.db)
    print("| operator | rows | median error, auto | ensemble | mean, auto | ensemble |")
    print("|---|---:|---:|---:|---:|---:|")
    for (op, dtype), recs in sorted(groups.items()):
        if len(recs) < 20:
            continue
        fold = np.random.default_rng(args.seed).permutation(len(recs)) % args.folds
        auto, ens = (np.concatenate(e) for e in zip(*(fold_errors(recs, op, k, fold, args.seed, args.budget)
                                                      for k in range(args.folds))))
        print(f"| {op} | {len(recs)} | {np.median(auto):.1%} | {np.median(ens):.1%} | "
              f"{auto.mean():.1%} | {ens.mean():.1%} |", flush=True)


if __name__ == "__main__":
    run_main(main)  # a database that is not there: one line
