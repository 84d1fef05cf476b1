"""Does a row need its own reference, or would its neighbours' do? (docs/ops-runs.md, run 4)

Each row's time is rescaled by the median of the references of the rows measured around it
(±k rows of its type, in the order they were measured; k = 0: its own, as the database reads
it), then each type with a physical-terms prior is cross-validated (4 folds, the cache size
that fits best). If the machine's phase changed slowly, a wider window would average the
reference's own noise away and do better.

    sgdsim ops import docs/validation/ops/db-grid-epyc-ref-10ms.csv --db ref.sqlite
    python examples/ops/reference_window.py ref.sqlite
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.ops.db import open_db
from sgdsim.ops.estimator.terms import CACHE_GRID, fit_rates, has_terms, term_matrix
from sgdsim.ops.records import learnable

WINDOWS = (0, 1, 2, 4)


def windowed(rows, k: int):
    out = []
    for op in sorted({r.op for r in rows}):
        mine = sorted((r for r in rows if r.op == op), key=lambda r: r.measured_at)
        ref = np.array([r.fwd_ref_s for r in mine])
        for i, r in enumerate(mine):
            local = float(np.median(ref[max(0, i - k):i + k + 1]))
            out.append(dataclasses.replace(r, fwd_s=r.fwd_s * ref.mean() / local))
    return out


def cv_over_caches(t: np.ndarray, matrix_of) -> tuple[float, float]:
    """(median held-out |error|, cache bytes) of terms fitted by NNLS, 4 folds, at the cache
    size of ``CACHE_GRID`` that does best; ``matrix_of(cache)``: the rows' term matrix."""
    fold = np.random.default_rng(0).permutation(len(t)) % 4
    best = (np.inf, 0.0)
    for cache in CACHE_GRID:
        X, pred = matrix_of(cache), np.zeros(len(t))
        for k in range(4):
            pred[fold == k] = X[fold == k] @ np.array(fit_rates(X[fold != k], t[fold != k]))
        best = min(best, (float(np.median(np.abs(pred / t - 1))), cache))
    return best


def cv_error(op: str, rows) -> float:
    """Median held-out |error| of the type's terms prior, 4 folds, the best cache size."""
    params = [r.params for r in rows]
    return cv_over_caches(np.array([r.fwd_s for r in rows]),
                          lambda cache: term_matrix(op, rows[0].dtype, params, cache))[0]


def main() -> None:
    with open_db(sys.argv[1], create=False) as db:
        raw = [r for r in db.load(raw=True) if r.fwd_ref_s > 0]
    ops = sorted({r.op for r in raw if has_terms(r.op)})
    print("| rows | " + " | ".join(ops) + " |")
    print("|---|" + "---:|" * len(ops))
    variants = [("as timed", raw)] + [(f"reference ±{k} rows", windowed(raw, k)) for k in WINDOWS]
    for name, rows in variants:
        kept = learnable(rows)[0]
        cells = [f"{cv_error(op, [r for r in kept if r.op == op]):.1%}" for op in ops]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run_main(main, "DB", 1)
