"""Run 56 (docs/ops-runs.md): the products' terms fitted to grid rows, judged on rows of
widths no grid draws. Per type, the prior is fitted to every row of the training grids and
predicts every row of the gap database, once with the wide-output rate switched on past
4,096 columns (``matmul.WIDE_N`` as committed) and once from 8,192 on: the two fit the grids
alike (they draw no width in between) and differ only on the gap's rows. Signed error is
estimated / measured - 1, by the output's width.

    python docs/validation/ops/run56/gap_errors.py GAP.sqlite GRID.sqlite [GRID.sqlite ...] [--scan]

``--scan`` also prints, per type, the gap rows' forward median |error| (and signed median)
with the rate starting at each of several widths inside the gap: chosen on these rows, so
in sample, a candidate for a later held-out run and nothing more.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "examples", "ops"))
from prior_cv import load_groups  # noqa: E402
from run_main import run_main  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.estimator.prior import held_out_times  # noqa: E402
from sgdsim.ops.optypes import matmul  # noqa: E402
from terms_cv import errors_against  # noqa: E402

TYPES = ("addmm", "mm")
THRESHOLDS = (4096, 8191)  # the rate from 4,097 columns (as committed) or from 8,192
SCAN = (4096, 5120, 5632, 6144, 7168, 8191)
BANDS = ((2048, 4096), (4097, 5120), (5121, 6144), (6145, 7168), (7169, 8191), (8192, 16384))

def errors(train, test, wide_n: int) -> np.ndarray:
    """(len(test), 2) signed errors of the forward and backward (NaN where not timed)."""
    recs = list(train) + list(test)
    fold = np.array([0] * len(train) + [1] * len(test))
    before, matmul.WIDE_N = matmul.WIDE_N, wide_n
    try:
        got = held_out_times(recs, True, fold)[len(train):]
    finally:
        matmul.WIDE_N = before
    return errors_against(test, got)


def _cell(e: np.ndarray) -> str:
    e = e[~np.isnan(e)]
    return f"{np.median(e):+.1%} / {np.median(np.abs(e)):.1%}" if e.size else "-"


def table(op: str, train, test) -> None:
    n = np.array([r.params["n"] for r in test])
    errs = {w: errors(train, test, w) for w in THRESHOLDS}
    print(f"\n{op}: fitted to {len(train)} grid rows, judged on {len(test)} rows\n")
    print("| width | rows | forward, wide from 4,097: signed / abs | from 8,192 | backward, from 4,097 | from 8,192 |")
    print("|---|---:|---:|---:|---:|---:|")
    for lo, hi in BANDS + ((4097, 8191),):
        s = (n >= lo) & (n <= hi)
        if s.any():
            label = f"**{lo:,}-{hi:,}**" if (lo, hi) == (4097, 8191) else f"{lo:,}-{hi:,}"
            cells = [_cell(errs[w][s, j]) for j in (0, 1) for w in THRESHOLDS]
            print(f"| {label} | {s.sum()} | " + " | ".join(cells) + " |")


def scan(op: str, train, test) -> None:
    n = np.array([r.params["n"] for r in test])
    inside = (n > 4096) & (n < 8192)
    cells = []
    for w in SCAN:
        e = errors(train, test, w)[inside, 0]
        cells.append(f"{np.median(np.abs(e)):.1%} ({np.median(e):+.1%})")
    print(f"| {op} | {inside.sum()} | " + " | ".join(cells) + " |")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--scan"]
    if len(args) < 2:
        raise ConfigError("usage: python docs/validation/ops/run56/gap_errors.py GAP.sqlite GRID.sqlite [GRID.sqlite ...] [--scan]")
    _, gap, _ = load_groups(args[0])
    grids = [load_groups(p)[1] for p in args[1:]]
    print(f"gap rows: {args[0]}; grids: {', '.join(os.path.basename(p) for p in args[1:])}")
    pairs = [(op, [r for g in grids for r in g.get((op, "float32"), [])], gap.get((op, "float32"), []))
             for op in TYPES]
    pairs = [(op, train, test) for op, train, test in pairs if train and test]
    for op, train, test in pairs:
        table(op, train, test)
    if "--scan" in sys.argv[1:]:
        print("\nthe gap rows' forward, median |error| (signed median), by the width the rate starts after"
              " (in sample)\n")
        print("| type | rows | " + " | ".join(f"{w:,}" for w in SCAN) + " |")
        print("|---|---:|" + "---:|" * len(SCAN))
        for op, train, test in pairs:
            scan(op, train, test)


if __name__ == "__main__":
    run_main(main)
