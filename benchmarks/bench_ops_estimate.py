"""Time of the estimator and of an estimated profile (issue 11's targets), from the committed
grid (docs/validation/ops/db-grid.csv, imported into a fresh SQLite file):

- ``train`` of three operator types (conv2d, addmm, relu) with ``--budget 30`` (target <= 60 s
  per type on 2 cores);
- ``estimate_profile`` of ResNet-50, batch 8, from those estimators and the grid (target
  <= 20 s): the meta-device trace, one lookup, the predictions.

``--write`` puts the table into docs/benchmarks-opsdb.md between the OPSEST markers. Needs
torch (``make install-dev``). Run on a quiet machine.

    python benchmarks/bench_ops_estimate.py [--write]
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from docblock import machine, publish
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import estimate_profile
from sgdsim.ops.estimator.model import train
from sgdsim.ops.exchange import import_records
from sgdsim.ops.optypes import REGISTRY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks-opsdb.md")
GRID = os.path.join(ROOT, "docs", "validation", "ops", "db-grid.csv")
DEVICE = "cpu (1 threads, AMD EPYC)"  # the device the committed grid was measured on
TYPES = ("conv2d", "addmm", "relu")
BUDGET_S = 30.0


def main() -> None:
    rows = ["| what | wall (s) | target (s) |", "|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp, open_db(os.path.join(tmp, "g.sqlite")) as db:
        db.upsert(import_records(GRID))
        for i, op in enumerate(TYPES):
            records = db.load(device=DEVICE, op=op)
            t = time.perf_counter()
            est = train(records, REGISTRY[op].shape_dims, np.random.default_rng(i), BUDGET_S)
            sec = time.perf_counter() - t
            db.save_estimator(DEVICE, op, "float32", est.to_json())
            rows.append(f"| train {op} ({len(records)} rows, budget {BUDGET_S:.0f} s, "
                        f"{est.stats['arch']}) | {sec:.1f} | 60 |")
        for op in set(REGISTRY) - set(TYPES):  # the profile needs every type resnet50 calls
            records = db.load(device=DEVICE, op=op)
            if len(records) >= 10:
                est = train(records, REGISTRY[op].shape_dims, np.random.default_rng(0), 2.0)
                db.save_estimator(DEVICE, op, "float32", est.to_json())
        t = time.perf_counter()
        prof = estimate_profile("zoo:resnet50", 8, db, DEVICE)
        sec = time.perf_counter() - t
        rows.append(f"| estimated profile, zoo:resnet50 batch 8 ({len(prof.ops)} ops) | "
                    f"{sec:.1f} | 20 |")
    publish(DOC, "OPSEST", "\n".join([*rows, "", f"{machine()}; one run each."]))


if __name__ == "__main__":
    main()
