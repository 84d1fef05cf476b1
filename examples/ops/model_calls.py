"""Estimators trained on a grid, judged on models' own calls: shapes never in the grid.

The cross-validation of ``prior_cv.py`` holds out rows of the grid, so its shapes are the
grid's kind. A model's calls are the shapes an estimate is for (ResNet-50's 1,024-channel
convolutions, GPT-2's 50,257-word head), and a database from ``sgdsim ops measure --model``
holds them measured in the same session as its grid. Per operator type, the error of the grid's
trained estimators on those calls; with ``--steps``, each (model, batch)'s estimated step
against the step its own calls sum to (``estimate_models.py``'s "exact" column), so that the
estimator is judged without timing a step again.

    sgdsim ops import docs/validation/ops/db-grid-epyc-ref.csv --db grid.sqlite
    sgdsim ops import docs/validation/ops/db-models-epyc-ref.csv --db models.sqlite
    sgdsim ops train --db grid.sqlite --budget 5
    python examples/ops/model_calls.py models.sqlite grid.sqlite [--steps] [--calls addmm] [--dtype bfloat16]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.ops.cli import DTYPES
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import load_estimators

STEP_CASES = [("zoo:mlp", (32, 256)), ("zoo:resnet50", (2, 4)), ("zoo:bert-base?seq_len=64", (2, 4)),
              ("zoo:gpt2?seq_len=64", (2, 4))]


def _device(db, path: str) -> str:
    names = [d.name for d in db.devices()]
    if len(names) != 1:
        print(f"model_calls.py: {path} needs the measurements of exactly one device, found "
              f"{len(names)}", file=sys.stderr)
        raise SystemExit(2)
    return names[0]


def type_rows(models, estimators) -> list[str]:
    """One table row per type with an estimator: the grid's estimates of the models' calls."""
    out = []
    for (op, dtype), est in sorted(estimators.items()):
        rows = [r for r in models.load(op=op) if r.dtype == dtype and r.fwd_s > 0 and not r.fwd_bound]
        if not rows:
            continue
        fwd, bwd = est.predict([r.params for r in rows])
        f_err = np.abs(fwd / np.array([r.fwd_s for r in rows]) - 1)
        timed = np.array([r.bwd_s > 0 and not r.bwd_bound for r in rows])
        b_err = np.abs(bwd[timed] / np.array([r.bwd_s for r in rows])[timed] - 1)
        total = sum(r.fwd_s + (r.bwd_s if t else 0.0) for r, t in zip(rows, timed))
        ratio = (fwd.sum() + bwd[timed].sum()) / total
        back = f"{np.median(b_err):.1%} | {b_err.mean():.1%}" if timed.any() else "- | -"
        out.append(f"| {op} | {len(rows)} | {np.median(f_err):.1%} | {f_err.mean():.1%} | {back} | {ratio:.2f} |")
    return out


def call_rows(models, estimators, op: str, dtype: str = "float32") -> list[str]:
    """Each of the models' calls of ``op`` in ``dtype``, largest backward last: its parameters,
    its measured times and the estimate over each."""
    est = estimators.get((op, dtype))
    rows = sorted((r for r in models.load(op=op) if r.dtype == dtype and r.fwd_s > 0),
                  key=lambda r: r.bwd_s)
    if est is None or not rows:
        return [f"(no {dtype} {op} calls with a trained estimator)"]
    fwd, bwd = est.predict([r.params for r in rows])
    out = [f"| {op} call | fwd ms | estimated / measured | bwd ms | estimated / measured |",
           "|---|---:|---:|---:|---:|"]
    for r, f, b in zip(rows, fwd, bwd):
        back = f"{r.bwd_s * 1e3:.3f} | {b / r.bwd_s:.2f}" if r.bwd_s > 0 else "- | -"
        shape = ", ".join(f"{k}={v}" for k, v in sorted(r.params.items()))
        out.append(f"| {shape} | {r.fwd_s * 1e3:.3f} | {f / r.fwd_s:.2f} | {back} |")
    return out


def steps(models, grid, device: str, cases=STEP_CASES,
          dtype: str = "float32") -> list[tuple[str, int, float, float]]:
    """(model, batch, the step of its own calls, the step from the grid's estimators), seconds;
    the calls in ``dtype`` (``sgdsim ops measure --model M --dtype D`` rows)."""
    from estimate_models import GridOnly, step_of  # beside this script; imports torch: only here
    from sgdsim.ops.estimate import estimate_profile

    def step(spec, b, db):
        return step_of(estimate_profile(spec, b, db, device, dtype=dtype, step_factor=False))
    return [(spec, b, step(spec, b, models), step(spec, b, GridOnly(models, grid)))
            for spec, batches in cases for b in batches]


def step_rows(models, grid, device: str, dtype: str = "float32") -> list[str]:
    """(model, batch): the step from the grid's estimators against the step of its own calls."""
    return [f"| {spec} | {b} | {exact * 1e3:.2f} | {est * 1e3:.2f} | {est / exact - 1:+.1%} |"
            for spec, b, exact, est in steps(models, grid, device, dtype=dtype)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],  # one usage line, unwrapped
                                 usage="%(prog)s [-h] [--steps] [--calls OP] [--dtype D] models_db grid_db")
    ap.add_argument("models_db", help="sgdsim ops measure --model rows (one device)")
    ap.add_argument("grid_db", help="a grid with trained estimators (sgdsim ops train), same device")
    ap.add_argument("--steps", action="store_true", help="also the steps of four zoo models (needs torch)")
    ap.add_argument("--calls", metavar="OP", help="also each of the models' calls of this type")
    ap.add_argument("--dtype", default="float32", metavar="D", choices=DTYPES,
                    help="the calls' precision for --steps and --calls")
    args = ap.parse_args()
    with open_db(args.models_db, create=False) as models, open_db(args.grid_db, create=False) as grid:
        device = _device(models, args.models_db)
        estimators = load_estimators(grid, device)
        if not estimators:
            print(f"model_calls.py: {args.grid_db} has no trained estimator for {device}: run "
                  "sgdsim ops train on it", file=sys.stderr)
            raise SystemExit(2)
        print(f"Device: {device}\n\n| operator | models' calls | fwd median error | mean | bwd median "
              "| mean | sum estimated / measured |\n|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(type_rows(models, estimators)))
        if args.calls:
            print("\n" + "\n".join(call_rows(models, estimators, args.calls, args.dtype)))
        if args.steps:
            print("\n| model | batch | its calls' step ms | estimated ms | error |\n|---|---:|---:|---:|---:|")
            print("\n".join(step_rows(models, grid, device, args.dtype)), flush=True)


if __name__ == "__main__":
    run_main(main)  # a database that is not there: one line
