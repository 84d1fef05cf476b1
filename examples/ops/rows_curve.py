"""Held-out error against the rows a type trains on: each grid's rows of a type subsampled to
n (four draws), then held out 4-fold with the terms prior (``held_out_times``, as
``terms_cv.py``), the mean of the medians over grids and draws (docs/ops-runs.md, run 36).

    sgdsim ops import docs/validation/ops/db-grid-epyc-2026-12-06-run35.csv --db run35.sqlite
    python examples/ops/rows_curve.py eltwise,mm 30,60,90 run35.sqlite [more.sqlite ...]
"""
from __future__ import annotations

import sys

import numpy as np

from prior_cv import load_groups  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError
from sgdsim.units import parse_number
from sgdsim.ops.estimator.prior import held_out_times

DRAWS = 4


def curve(recs, n: int) -> list[float]:
    """The held-out forward median of ``DRAWS`` subsamples of n rows."""
    meds = []
    for s in range(DRAWS):
        rng = np.random.default_rng(s)
        sub = [recs[i] for i in rng.permutation(len(recs))[:n]]
        fwd = np.array([r.fwd_s for r in sub])
        got = held_out_times(sub, True, rng.permutation(len(sub)) % 4)[:, 0]
        ok = fwd > 0
        meds.append(float(np.median(np.abs(got[ok] / fwd[ok] - 1))))
    return meds


def _sizes(text: str) -> list[int]:
    """Rows to subsample, each at least 8 (4 folds of 2)."""
    return [parse_number(x, "SIZES (rows to subsample)", lo=8, hi=10 ** 6, integer=True)
            for x in text.split(",")]


def main() -> None:
    ops, sizes, dbs = sys.argv[1].split(","), _sizes(sys.argv[2]), sys.argv[3:]
    grids = [load_groups(d)[1] for d in dbs]
    for op in ops:
        for d, g in zip(dbs, grids):
            if (op, "float32") not in g:
                raise ConfigError(f"{d} has no float32 rows of {op!r}")
    print("| type | " + " | ".join(f"{n} rows" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for op in ops:
        cells = []
        for n in sizes:
            meds = [m for g in grids for m in curve(g[(op, "float32")], n)]
            cells.append(f"{100 * np.mean(meds):.1f} % ({100 * min(meds):.1f}-{100 * max(meds):.1f})")
        print(f"| {op} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run_main(main, "TYPES SIZES DB [DB ...]  (TYPES and SIZES: comma lists)", 3)
