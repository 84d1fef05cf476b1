"""Where the matrix products' held-out errors sit (docs/ops-runs.md, after run 53): every row of
the grids given held out 4-fold as terms_cv.py holds it out (seed 0), its signed error
(estimated / measured - 1) grouped by the output's width against the 16-column tile and by the
product's bytes.

    python docs/validation/ops/run53/product_residuals.py mm run15.sqlite run17.sqlite ... [--dtype bfloat16]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "examples", "ops"))
from prior_cv import load_groups  # noqa: E402
from run_main import run_main  # noqa: E402
from terms_cv import signed_errors  # noqa: E402

def main() -> None:
    ap = argparse.ArgumentParser(description="where the matrix products' held-out errors sit")
    ap.add_argument("op")
    ap.add_argument("grids", nargs="+", metavar="GRID.sqlite")
    ap.add_argument("--dtype", default="float32", help="the rows of another precision (run 58's bfloat16)")
    args = ap.parse_args()
    op, paths = args.op, args.grids
    params, errors = [], []
    for path in paths:
        _, groups, _ = load_groups(path)
        recs = groups.get((op, args.dtype), [])
        if not recs:
            continue
        params += [r.params for r in recs]
        errors += list(signed_errors(recs, 0)[:, 0])
    e = np.array(errors)
    b = np.array([p.get("b", 1) for p in params], float)
    m, k, n = (np.array([p[x] for p in params], float) for x in "mkn")
    off = n % 16 != 0
    print(f"{op}: {len(e)} rows from {len(paths)} grids; held-out forward median |error| {np.median(np.abs(e)):.1%}\n")
    print("| rows | off 16 | count | signed median | median abs |\n|---|---|---:|---:|---:|")
    for lo, hi in [(1, 16), (16, 17), (17, 1024), (1024, 8192), (8192, 1e9)]:  # narrower than a tile, one tile, ...
        for flag in (False, True):
            s = (n >= lo) & (n < hi) & (off == flag)
            if s.sum() >= 3:
                print(f"| n {lo:g}-{hi:g} | {'yes' if flag else 'no'} | {s.sum()} | {np.median(e[s]):+.1%} | {np.median(np.abs(e[s])):.1%} |")
    print("\n| bytes of A, B and C | count | signed median | median abs |\n|---|---:|---:|---:|")
    total = 4 * b * (m * k + k * n + m * n)
    for lo, hi in [(0, 1e6), (1e6, 4e6), (4e6, 32e6), (32e6, 1e12)]:
        s = (total >= lo) & (total < hi)
        if s.sum():
            print(f"| {lo / 1e6:g}-{hi / 1e6:g} MB | {s.sum()} | {np.median(e[s]):+.1%} | {np.median(np.abs(e[s])):.1%} |")


run_main(main)
