"""Physical-terms priors tried for conv2d and mean on the grid's rows (docs/ops.md §3). None
was kept then; conv2d's terms were adopted later, with the backward's second product, judged
on models' own calls (``ops/optypes/conv.conv_terms``, ``model_calls.py``).

Each candidate is a list of terms (time ≈ Σ rate · term, rates ≥ 0 by NNLS on relative
error, as ``estimator/terms.py``); printed: the 4-fold held-out median error of the forward
time with the best cache size, and for conv2d the rates fitted on the whole grid applied to
a model database's conv2d calls (sum estimated / measured, median error per call).

    sgdsim ops import docs/validation/ops/db-grid-epyc-ref.csv --db grid.sqlite
    sgdsim ops import docs/validation/ops/db-models-epyc-ref.csv --db models.sqlite
    python examples/ops/terms_candidates.py models.sqlite grid.sqlite [more grids...]
"""
from __future__ import annotations

import math
import sys

import numpy as np

from reference_window import cv_over_caches  # beside this script
from run_main import run_main
from sgdsim.ops.db import open_db
from sgdsim.ops.estimator.terms import CACHE_GRID, fit_rates
from sgdsim.ops.optypes.base import beyond_cache, grad, window_out
from sgdsim.ops.optypes.conv import macs


def _up(c: int, block: int) -> int:
    return math.ceil(c / block) * block


def conv_terms(p: dict, cache: float) -> dict[str, list[float]]:
    """oneDNN blocks channels by 8 (AVX2): MACs over channel counts padded to the block."""
    oh = window_out(p["h"], p["kh"], p["sh"], p["ph"])
    ow = window_out(p["w"], p["kw"], p["sw"], p["pw"])
    k, g = p["kh"] * p["kw"], float(grad(p["gi"]))
    m = float(macs(p))
    out, inp = p["n"] * p["cout"] * oh * ow, p["n"] * p["cin"] * p["h"] * p["w"]
    wt = p["cout"] * p["cin"] // p["groups"] * k
    padded = float(p["n"] * _up(p["cout"], 8) * oh * ow * _up(p["cin"] // p["groups"], 8) * k)
    spill = [beyond_cache(e, 1, "float32", cache) for e in (inp, out, wt)]
    return {"MACs": [1, g, m], "+ elements": [1, g, m, out, inp, wt],
            "padded MACs + elements": [1, g, padded, out, inp, wt],
            "both MACs + elements": [1, g, m, padded, out, inp, wt],
            "MACs + elements + cache": [1, g, m, out, inp, wt, *spill]}


def mean_terms(p: dict, cache: float) -> dict[str, list[float]]:
    n, o, g = float(p["numel"]), float(p["out"]), float(grad(p["gi"]))
    return {"elements": [1.0, g, n, o],
            "+ cache": [1.0, g, n, o, beyond_cache(n + o, 1, "float32", cache)]}


TERMS = {"conv2d": conv_terms, "mean": mean_terms}


def matrix(op: str, rows, cache: float, name: str) -> np.ndarray:
    return np.array([TERMS[op](r.params, cache)[name] for r in rows], dtype=float)


def cv(op: str, rows, name: str) -> tuple[float, float]:
    """(held-out median |error|, cache bytes) of the best cache size, 4 folds."""
    return cv_over_caches(np.array([r.fwd_s for r in rows]),
                          lambda cache: matrix(op, rows, cache, name))


def load(path: str, op: str):
    with open_db(path, create=False) as db:
        return [r for r in db.load(op=op) if r.fwd_s > 0 and not r.fwd_bound]


def main() -> None:
    models = load(sys.argv[1], "conv2d")
    print("| grid | type | terms | held-out median | cache | model's calls: sum | median |")
    print("|---|---|---|---:|---:|---:|---:|")
    for path in sys.argv[2:]:
        for op in TERMS:
            rows = load(path, op)
            for name in TERMS[op](rows[0].params, CACHE_GRID[0]):
                err, cache = cv(op, rows, name)
                cells = "- | -"
                if op == "conv2d" and models:
                    rates = np.array(fit_rates(matrix(op, rows, cache, name),
                                               np.array([r.fwd_s for r in rows])))
                    est = matrix(op, models, cache, name) @ rates
                    got = np.array([r.fwd_s for r in models])
                    cells = f"{est.sum() / got.sum():.2f} | {np.median(np.abs(est / got - 1)):.1%}"
                print(f"| {path} | {op} | {name} | {err:.1%} | {cache / 2 ** 20:g} MiB | {cells} |",
                      flush=True)


if __name__ == "__main__":
    run_main(main, "MODELS_DB GRID_DB [GRID_DB ...]", 2)
