"""The estimator with and without choosing a roofline prior, by k-fold cross-validation
(issue 38, item 3): per operator type, every row is held out once; "MLP" learns the time,
"auto" trains with and without the prior on half the budget each and keeps the one whose
validation error is lower (beside the prior, a quadratic correction competes with the networks
on the same validation rows). Both get the same total budget. Printed beside the type's
test-retest median (sgdsim ops retest).

    python examples/ops/prior_cv.py DB [--budget 5] [--folds 4] [--seed 0] [--raw] [--ops conv2d,mm]

``--raw``: the rows as timed, not rescaled by their type's reference (ops/reference.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import defaultdict

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.db import open_db
from sgdsim.ops.estimator.model import train
from sgdsim.ops.estimator.prior import fit_prior, prior_times
from sgdsim.ops.records import learnable
from sgdsim.ops.optypes import REGISTRY


def errors(est, rows) -> np.ndarray:
    fwd, _ = est.predict([r.params for r in rows])
    return np.abs(fwd / np.array([r.fwd_s for r in rows]) - 1)


def load_groups(path: str, raw: bool = False):
    """(device, {(op, dtype): measurements}, {(op, dtype): test-retest}) of a one-device DB."""
    with open_db(path, create=False) as db:
        names = [d.name for d in db.devices()]
        if len(names) != 1:
            print(f"prior_cv.py: {path} needs the measurements of exactly one device, found "
                  f"{len(names)} ({', '.join(names) or 'an empty database'})", file=sys.stderr)
            raise SystemExit(2)
        (device,) = names
        groups = defaultdict(list)
        for r in learnable(db.load(device=device, raw=raw))[0]:
            if r.op in REGISTRY and r.op != "other":
                groups[(r.op, r.dtype)].append(r)
        retests = {k[1:]: v for k, v in db.load_retests().items() if k[0] == device}
    return device, groups, retests


def override_support(support: int | None) -> None:
    """Every type with terms fitted at ``support`` rows a rate, in place of its own (a
    comparison, in this process only); None leaves each type its own."""
    if support is None:
        return
    if support < 1:
        raise ConfigError(f"--support is at least 1, got {support}")
    for op in [op for op, t in REGISTRY.items() if t.prior_terms is not None]:
        REGISTRY[op] = dataclasses.replace(REGISTRY[op], min_support=support)


def type_rows(path: str, op: str) -> list:
    """Every row of one operator type in a one-device DB, whatever its dtype."""
    return [r for (kind, _), rows in load_groups(path)[1].items() if kind == op for r in rows]


def terms_estimates(grid_rows, calls):
    """(n, 2) seconds: the calls' forward and backward from their type's physical terms fitted
    on ``grid_rows`` (what ``ops train`` ships for a type with terms); None if no row has a
    time to fit."""
    prior = fit_prior(grid_rows, True)
    if prior is None:
        return None
    return prior_times(calls[0].op, calls[0].dtype, [c.params for c in calls], prior)


def cv_arguments(description: str) -> argparse.Namespace:
    """DB, --budget (s per model), --folds, --seed: what both cross-validations take."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("db")
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--raw", action="store_true", help="the rows as timed, without their reference")
    ap.add_argument("--ops", default=None, help="comma list of operator types (default: all)")
    return ap.parse_args()


def main() -> None:
    args = cv_arguments(__doc__.splitlines()[0])
    device, groups, retests = load_groups(args.db, args.raw)
    print(f"Device: {device}; {args.folds}-fold, budget {args.budget:g} s per model, seed {args.seed}"
          f"{', rows as timed (--raw)' if args.raw else ''}\n")
    print("| operator | rows | median error, MLP | auto | mean, MLP | auto | prior chosen | quadratic chosen "
          "| test-retest median | auto within 1.5x |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    wanted = None if args.ops is None else set(args.ops.split(","))
    for (op, dtype), recs in sorted(groups.items()):
        if len(recs) < 20 or (wanted is not None and op not in wanted):
            continue
        fold = np.random.default_rng(args.seed).permutation(len(recs)) % args.folds
        err = {"mlp": [], "auto": []}
        chosen = quadratic = 0
        for k in range(args.folds):
            fit = [r for r, f in zip(recs, fold) if f != k]
            test = [r for r, f in zip(recs, fold) if f == k]
            for name, prior in (("mlp", False), ("auto", "auto")):
                est = train(fit, REGISTRY[op].shape_dims, np.random.default_rng([args.seed, k]), args.budget,
                            use_prior=prior, clock_stop=False)
                err[name].append(errors(est, test))
                chosen += name == "auto" and est.prior is not None
                quadratic += name == "auto" and est.quadratic
        m, a = np.concatenate(err["mlp"]), np.concatenate(err["auto"])
        again = retests.get((op, dtype))
        noise = f"{again['fwd_median']:.1%} | {'yes' if np.median(a) <= 1.5 * again['fwd_median'] else '**no**'}" \
            if again else "- | -"
        print(f"| {op} | {len(recs)} | {np.median(m):.1%} | {np.median(a):.1%} | {m.mean():.1%} | {a.mean():.1%} | "
              f"{chosen} of {args.folds} | {quadratic} of {args.folds} | {noise} |", flush=True)


if __name__ == "__main__":
    run_main(main)  # a database that is not there: one line
