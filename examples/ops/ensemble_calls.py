"""Would several trainings of a type, combined, be steadier on models' own calls than one?
(issue 38, item 3.) Two trainings of the same grid rows can pick different principal components
and networks whose validation errors are a few points apart, and differ by tens of percent on
shapes the grid never held (docs/ops-runs.md, run 7). Per operator type and seed: one estimator
trained with the whole budget, and K trained with a K-th of it each (other seeds, so other
validation splits), combined as ``ops train --members K`` does (their median; ``--combine
mean``: their geometric mean); both judged on a models database of the same device
(``sgdsim ops measure --model``): forward median |error| and the estimated over the measured
sum of the calls' forward and backward.

    python examples/ops/ensemble_calls.py grid.sqlite models.sqlite --ops conv2d,addmm \
        [--members 3] [--seeds 3] [--budget 5] [--single-budget 10]
"""
from __future__ import annotations

import argparse

import numpy as np
from prior_cv import load_groups  # beside this script
from run_main import run_main

from sgdsim.ops.db import open_db
from sgdsim.ops.estimator.ensemble import Ensemble
from sgdsim.ops.estimator.model import train
from sgdsim.ops.optypes import REGISTRY


def judged(preds, rows) -> tuple[float, float]:
    """(forward median |error|, estimated / measured sum) of (fwd, bwd) predictions."""
    fwd, bwd = preds
    f_true, b_true = np.array([r.fwd_s for r in rows]), np.array([r.bwd_s for r in rows])
    timed = (b_true > 0) & np.array([not r.bwd_bound for r in rows])
    ratio = (fwd.sum() + bwd[timed].sum()) / (f_true.sum() + b_true[timed].sum())
    return float(np.median(np.abs(fwd / f_true - 1))), float(ratio)


def combined(members, params, how: str):
    """``ops train --members``'s median (``Ensemble``), or the geometric mean it replaced."""
    if how == "median":
        return Ensemble(members).predict(params)
    preds = [m.predict(params) for m in members]
    mean = [np.exp(np.mean([np.log(np.maximum(p[i], 1e-12)) for p in preds], axis=0)) for i in (0, 1)]
    return mean[0], np.where(preds[0][1] > 0, mean[1], 0.0)


def one_type(recs, calls, op: str, args) -> str:
    dims, params = REGISTRY[op].shape_dims, [r.params for r in calls]
    single, ens = [], []
    for s in range(args.seeds):
        est = train(recs, dims, np.random.default_rng(s), args.single_budget or args.budget, use_prior="auto")
        single.append(judged(est.predict(params), calls))
        members = [train(recs, dims, np.random.default_rng([s, j]), args.budget / args.members,
                         use_prior="auto") for j in range(args.members)]
        ens.append(judged(combined(members, params, args.combine), calls))
    cell = lambda v: " / ".join(f"{e:.1%}" for e, _ in v) + " | " + " / ".join(f"{r:.2f}" for _, r in v)
    return f"| {op} | {len(calls)} | {cell(single)} | {cell(ens)} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid_db")
    ap.add_argument("models_db")
    ap.add_argument("--ops", required=True, help="comma list of operator types")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=5.0, help="seconds per type, split among the members")
    ap.add_argument("--combine", choices=("median", "mean"), default="median",
                    help="the members' median (what ops train stores) or geometric mean")
    ap.add_argument("--single-budget", type=float, default=None,
                    help="the one estimator's budget (default --budget; members overrun theirs "
                         "more, so three take about twice one's time: 2 x --budget matches it)")
    args = ap.parse_args()
    device, groups, _ = load_groups(args.grid_db)
    with open_db(args.models_db, create=False) as models:
        print(f"Device: {device}; {args.seeds} seeds; {args.members} members of {args.budget / args.members:g} s "
              f"against one of {args.single_budget or args.budget:g} s\n\n| operator | models' calls | one: forward median error, "
              "seed 0 / 1 / ... | sum | members combined: forward | sum |\n|---|---:|---|---|---|---|")
        for op in args.ops.split(","):
            calls = [r for r in models.load(op=op, device=device) if r.fwd_s > 0 and not r.fwd_bound]
            if calls and (op, "float32") in groups:
                print(one_type(groups[(op, "float32")], calls, op, args), flush=True)


if __name__ == "__main__":
    run_main(main)  # a database that is not there: one line
