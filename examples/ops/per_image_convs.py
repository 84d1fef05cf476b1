"""Run 31's two measures (docs/ops-runs.md): the models' per-image convolutions (ATen's
``Slow2d`` with the input read in place: a 1x1 kernel at stride 1, no padding, no bias, fewer
than 16 images, float32) as an estimate times them, and ResNet-50's step from a grid's
estimators against the step of its own calls, at batch 2 and 4.

The calls are timed through ``time_calls``, as ``sgdsim profile --estimate`` times them, so
that the same script judges any version of sgdsim put first on the path.

    sgdsim ops import docs/validation/ops/db-models-epyc-2026-12-02-run9.csv --db m.sqlite
    sgdsim ops import docs/validation/ops/db-grid-epyc-2026-12-02-run9.csv --db g.sqlite
    sgdsim ops train --db g.sqlite --budget 5 --members 3
    python examples/ops/per_image_convs.py m.sqlite g.sqlite [--steps]
"""
from __future__ import annotations

import argparse

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import load_estimators, time_calls
from sgdsim.ops.optypes import REGISTRY

BATCHES = (2, 4)


def per_image(p: dict) -> bool:
    return (p["kh"] == p["kw"] == 1 and p["sh"] == p["sw"] == 1 and p["ph"] == p["pw"] == 0
            and p["n"] < 16 and not p["bias"] and p["groups"] == 1)


class NoRows:
    """Every call a miss: the estimators answer."""

    def lookup(self, device, keys):
        return {}

    def load(self, **_):
        return []


def call_errors(models, estimators, device: str) -> tuple[np.ndarray, np.ndarray, int]:
    """|estimated / measured - 1| of the per-image calls' forwards and (timed) backwards."""
    rows = [r for r in models.load(op="conv2d", dtype="float32", raw=True)
            if per_image(r.params) and r.fwd_s > 0 and not r.fwd_bound]
    if not rows:
        raise ConfigError("the models database has no per-image convolution (ResNet-50's 1x1 "
                          "layers at a batch under 16: ops measure --model zoo:resnet50)")
    timed = time_calls([REGISTRY["conv2d"].build(r.params, "float32") for r in rows], NoRows(),
                       device, estimators)
    fwd = np.abs(timed.fwd / np.array([r.fwd_s for r in rows]) - 1)
    back = [i for i, r in enumerate(rows) if r.bwd_s > 0 and not r.bwd_bound]
    bwd = np.abs(timed.bwd[back] / np.array([rows[i].bwd_s for i in back]) - 1)
    return fwd, bwd, len(rows)


def step_lines(models, grid, device: str) -> list[str]:
    from model_calls import steps  # beside this script

    return [f"resnet50 batch {b}: its calls' step {exact * 1e3:.2f} ms, estimated "
            f"{est * 1e3:.2f} ms, {est / exact - 1:+.1%}"
            for _, b, exact, est in steps(models, grid, device, [("zoo:resnet50", BATCHES)])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models_db", help="sgdsim ops measure --model rows (one device)")
    ap.add_argument("grid_db", help="a grid with trained estimators (sgdsim ops train), same device")
    ap.add_argument("--steps", action="store_true", help="also ResNet-50's step (needs torch)")
    args = ap.parse_args()
    with open_db(args.models_db, create=False) as models, open_db(args.grid_db, create=False) as grid:
        names = [d.name for d in models.devices()]
        if len(names) != 1:
            raise ConfigError(f"{args.models_db} needs one device's rows, has {len(names)}")
        estimators = load_estimators(grid, names[0])
        if ("conv2d", "float32") not in estimators:
            raise ConfigError(f"{args.grid_db} has no trained conv2d estimator for {names[0]}")
        fwd, bwd, n = call_errors(models, estimators, names[0])
        print(f"{n} per-image convolutions: median |error| forward {np.median(fwd):.1%}, backward "
              f"{np.median(bwd):.1%}, together {np.median(np.concatenate([fwd, bwd])):.1%}")
        if args.steps:
            print("\n".join(step_lines(models, grid, names[0])))


if __name__ == "__main__":
    run_main(main)
