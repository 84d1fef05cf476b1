"""Does a roofline prior help the estimator? (issue 38, item 3) Per operator type, the same
split of a database's rows trains the estimator with and without the prior (same seed and
budget), and both are scored on the held-out shapes, beside the type's test-retest median
(``sgdsim ops retest``) when the database has one.

    python examples/ops/prior_eval.py DB [--budget 10] [--holdout 0.2] [--seed 0] [--op relu,mm]
"""
from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from sgdsim.ops.db import open_db
from sgdsim.ops.estimator.model import evaluate, holdout_split, learnable, train
from sgdsim.ops.optypes import REGISTRY


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--holdout", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--op", default="all")
    args = ap.parse_args()
    with open_db(args.db, create=False) as db:
        (device,) = [d.name for d in db.devices()]
        groups = defaultdict(list)
        for r in learnable(db.load(device=device))[0]:
            if r.op in REGISTRY and r.op != "other" and (args.op == "all" or r.op in args.op.split(",")):
                groups[(r.op, r.dtype)].append(r)
        retests = {k[1:]: v for k, v in db.load_retests().items() if k[0] == device}
    print(f"Device: {device}; budget {args.budget:g} s per training, {args.holdout:.0%} held out, seed {args.seed}\n")
    print("| operator | rows (held out) | median error, MLP | with the prior | mean error, MLP | with the prior "
          "| test-retest median | 1.5x |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (op, dtype), recs in sorted(groups.items()):
        if len(recs) < 20:
            continue
        fit, test = holdout_split(recs, args.holdout, np.random.default_rng(args.seed))
        scores = []
        for use_prior in (False, True):
            est = train(fit, REGISTRY[op].shape_dims, np.random.default_rng([args.seed, 1]), args.budget,
                        use_prior=use_prior, clock_stop=False)
            scores.append(evaluate(est, test))
        again = retests.get((op, dtype))
        noise = f"{again['fwd_median']:.1%} | {1.5 * again['fwd_median']:.1%}" if again else "- | -"
        print(f"| {op} | {len(recs)} ({len(test)}) | {scores[0]['fwd_median']:.1%} | {scores[1]['fwd_median']:.1%} | "
              f"{scores[0]['fwd_mean']:.1%} | {scores[1]['fwd_mean']:.1%} | {noise} |", flush=True)


if __name__ == "__main__":
    main()
