"""TPDS §4.2.1's one-time sweep of the coarse model's Eq. 5 threshold, on the lab's own trainer
(what a user would fit on) and on the held-out trainer family (what it is then checked on).

Eq. 5 takes the FCFS solution while the network's FCFS utilization is at most rho_T, the PS one
above. TPDS chose rho_T per cluster by sweeping {0.1, ..., 1.0} (0.6 on AWS, 0.5 on CloudLab).
Every grid is replayed from its committed runs (``validate --measured``) with the coarse model
only, its predictions made at each rho_T; prints the coarse model's mean |error|, max |error|
and signed mean on the fitted grids and on the held-out family.

    python examples/lab/threshold_sweep.py     # ~2 min
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile

import sgdsim.validate.run as run
from sgdsim.validate.cli import replay
from sgdsim.validate.grid import load_grid

FITTED = ("async", "cnn", "allreduce", "2ps", "widecnn")
HELD_OUT = ("torch",)
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)


@contextlib.contextmanager
def threshold(rho: float):
    """Replays predict with Eq. 5's threshold ``rho`` (a grid has no key for it: it belongs to
    the coarse model, not to the cluster's hardware file)."""
    plain = run.predict_with

    def predict(job, kw, **k):
        return plain(job, {**kw, "rho_threshold": rho}, **k)

    run.predict_with = predict
    try:
        yield
    finally:
        run.predict_with = plain


def errors(names, out: str) -> list[float]:
    errs = []
    for name in names:
        grid = load_grid(f"examples/grids/lab-{name}.toml")
        with contextlib.redirect_stderr(io.StringIO()):
            result = replay(grid, f"docs/validation/{name}/points.csv", os.path.join(out, name),
                            models=("coarse",))
        errs += [100 * (p.predicted / p.measured - 1) for cr in result.cases for p in cr.points
                 if p.model == "coarse" and p.measured and not getattr(p, "fitted", False)]
    return errs


def cell(errs: list[float]) -> str:
    return (f"{sum(map(abs, errs)) / len(errs):.1f} % | {max(map(abs, errs)):.1f} % | "
            f"{sum(errs) / len(errs):+.1f} %")


def main() -> None:
    print("| rho_T | fitted grids: mean \\|err\\| | max | signed | held-out trainer: mean \\|err\\| "
          "| max | signed |\n|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for rho in THRESHOLDS:
            with threshold(rho):
                fitted, held = errors(FITTED, tmp), errors(HELD_OUT, tmp)
            print(f"| {rho:g} | {cell(fitted)} | {cell(held)} |", flush=True)


if __name__ == "__main__":
    main()
