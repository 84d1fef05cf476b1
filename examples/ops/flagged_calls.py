"""Which of the models' calls an estimate says rest on a term with no rate, and how wrong they
are: the ``unfitted`` flags (forward terms) and ``bwd_unfitted`` (the backward's), each call's
backward estimated over measured, per type. A flag says what an estimate rests on; this shows
whether it also says where the estimate is wrong (docs/ops.md §4).

    sgdsim ops import docs/validation/ops/db-models-xeon-2026-12-05-run28.csv --db m28.sqlite
    sgdsim ops import GRID.csv --db g.sqlite && sgdsim ops train --db g.sqlite --budget 10
    python examples/ops/flagged_calls.py m28.sqlite g.sqlite [--op eltwise]
"""
from __future__ import annotations

import argparse

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import load_estimators
from sgdsim.ops.estimator.terms import unfitted_mask

OFF = 2.0  # a call off by more than this factor either way is a bad case


def flags(params: list[dict], op: str, dtype: str, prior: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per call: flagged with the backward's terms, and by the forward's alone."""
    fwd_only = {k: v for k, v in prior.items() if k != "bwd_unfitted"}
    return unfitted_mask(op, dtype, params, prior), unfitted_mask(op, dtype, params, fwd_only)


def summary(op: str, ratio: np.ndarray, flag: np.ndarray, alone: np.ndarray) -> str:
    bad = (ratio > OFF) | (ratio < 1 / OFF)
    err = np.abs(ratio - 1)

    def med(mask) -> str:
        return f"{np.median(err[mask]):.2f}" if mask.any() else "-"
    return (f"{op}: {len(ratio)} calls with a backward; flagged {flag.sum()} (forward terms alone "
            f"{alone.sum()}); off by more than {OFF:g}x: {bad.sum()}, flagged {(bad & flag).sum()} "
            f"({(bad & alone).sum()}); median |backward error| flagged {med(flag)}, "
            f"unflagged {med(~flag)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", help="database of the models' calls (ops measure --model)")
    ap.add_argument("grid", help="database of a grid with trained estimators (ops train)")
    ap.add_argument("--op", default=None, help="this operator type only (default: every type with terms)")
    args = ap.parse_args()
    with open_db(args.models, create=False) as m, open_db(args.grid, create=False) as g:
        device = g.devices()[0].name if g.devices() else None
        ests = load_estimators(g, device) if device else {}
        rows = m.load(op=args.op, raw=True)
    done = 0
    for (op, dtype), est in sorted(ests.items()):
        mine = [r for r in rows if (r.op, r.dtype) == (op, dtype) and r.bwd_s > 0 and not r.bwd_bound]
        if not mine or est.prior is None or "terms" not in est.prior:
            continue
        params = [r.params for r in mine]
        ratio = est.predict(params)[1] / np.array([r.bwd_s for r in mine])
        print(summary(op, ratio, *flags(params, op, dtype, est.prior)))
        done += 1
    if not done:
        raise ConfigError(f"no type with a terms estimator in {args.grid} has calls with a "
                          f"backward in {args.models}" + (f" (--op {args.op})" if args.op else ""))


if __name__ == "__main__":
    run_main(main)
