"""The roofline fallback on the committed databases (docs/ops.md §4): the grid's fitted
roofline and its error per type, then each type held out in turn from five models' steps
(no row, no estimator: its calls from the roofline fitted on everything else).

    python examples/ops/roofline.py      # ~1 min; prints the tables of docs/ops.md
"""
from __future__ import annotations

import os
import tempfile
from collections import defaultdict

import numpy as np

from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import time_calls
from sgdsim.ops.exchange import import_records
from sgdsim.ops.graph import trace_model
from sgdsim.ops.optypes import REGISTRY, classify
from sgdsim.ops.roofline import fit_roofline, work_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "docs", "validation", "ops")
DEV = "cpu (1 threads, AMD EPYC)"
MODELS = [("zoo:small-cnn", 32), ("zoo:resnet50", 2), ("zoo:vit-base", 1),
          ("zoo:bert-base?seq_len=64", 2), ("zoo:gpt2?seq_len=64", 2)]


class Without:
    """The database without one operator type."""

    def __init__(self, db, op):
        self.db, self.op = db, op

    def lookup(self, device, keys):
        return self.db.lookup(device, {k for k in keys if k[0] != self.op})

    def load(self, device=None, op=None, dtype=None):
        return [r for r in self.db.load(device=device, op=op, dtype=dtype) if r.op != self.op]


def per_type(db) -> None:
    fit = fit_roofline(db, DEV)
    print({k: v for k, v in fit.as_dict().items() if k != "device"})
    per = defaultdict(lambda: [[], [], 0.0, 0.0, 0.0, 0.0])
    for r in db.load(device=DEV):
        f, b = fit.times_s(work_of(REGISTRY[r.op].build(r.params, r.dtype), r.op, r.params))
        e = per[r.op]
        e[0].append(abs(f / r.fwd_s - 1))
        if r.bwd_s > 0 and b > 0:
            e[1].append(abs(b / r.bwd_s - 1))
        e[2:] = [e[2] + f, e[3] + r.fwd_s, e[4] + b, e[5] + r.bwd_s]
    print("| type | median error fwd | bwd | summed estimate / measured, fwd | bwd |")
    for op, e in sorted(per.items()):
        bwd = f"{np.median(e[1]):.0%}" if e[1] else "-"
        ratio = f"{e[4] / e[5]:.2f}x" if e[5] else "-"
        print(f"| {op} | {np.median(e[0]):.0%} | {bwd} | {e[2] / e[3]:.2f}x | {ratio} |")


def held_out(db) -> None:
    print("| model | type held out | its share | roofline / exact | step error |")
    for spec, b in MODELS:
        step = trace_model(spec, b)
        exact = time_calls(step.calls, db, DEV, {})
        total = float((exact.fwd + exact.bwd).sum())
        ops = np.array([classify(c)[0] for c in step.calls])
        for op in sorted(set(ops) - {"other"}):
            m = ops == op
            share = float((exact.fwd + exact.bwd)[m].sum()) / total
            if share < 0.01:
                continue
            held = time_calls(step.calls, Without(db, op), DEV, {})
            ratio = float((held.fwd + held.bwd)[m].sum()) / float((exact.fwd + exact.bwd)[m].sum())
            print(f"| {spec} b{b} | {op} | {share:.0%} | {ratio:.2f}x | "
                  f"{float((held.fwd + held.bwd).sum()) / total - 1:+.1%} |")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with open_db(os.path.join(tmp, "grid.sqlite")) as grid:
            grid.upsert(import_records(os.path.join(DATA, "db-grid.csv")))
            per_type(grid)
        with open_db(os.path.join(tmp, "both.sqlite")) as both:
            both.upsert(import_records(os.path.join(DATA, "db-grid.csv")))
            both.upsert(import_records(os.path.join(DATA, "db-models.csv")))
            held_out(both)


if __name__ == "__main__":
    main()
