"""Issue 38's per-type rule read over several sessions at once: each type's held-out error and
its retest, each pooled over the runs given (docs/ops-runs.md, after run 19).

One session's verdict moves with that session's noise: a type's 100-row retest median moved
up to 4x between runs 15-19 (bmm 3.4-15.0 %), and the rule (held-out forward median at most
1.5x the retest median) passed 8 to 16 of 17 types. Pooled, each median stands on every run's
rows. For each type with physical terms (the estimator ``ops train`` ships for them), every
grid's rows are held out 4-fold as ``terms_cv.py`` does (seed 0), with today's code; the retest
differences are those ``retest_bar.py`` reads. Printed per type: the pooled held-out median, the
pooled retest median, their ratio, and the ratio's range over the runs one at a time.

    sgdsim ops import docs/validation/ops/db-grid-epyc-2026-12-03-run15.csv --db run15.sqlite  # each run
    python examples/ops/pooled_bar.py run15.sqlite docs/validation/ops/retest-rows-epyc-2026-12-03-run15.csv \\
        run17.sqlite docs/validation/ops/retest-rows-epyc-2026-12-03-run17.csv ...
"""
from __future__ import annotations

import sys

import numpy as np

from prior_cv import load_groups  # beside this script
from retest_bar import retest_errors
from run_main import run_main
from sgdsim.errors import ConfigError
from sgdsim.ops.estimator.terms import has_terms
from terms_cv import row_errors

BAR = 1.5


def held_out_rows(db: str) -> dict[str, np.ndarray]:
    """Per float32 type with terms: each row's forward error, held out as ``terms_cv.py`` does."""
    _, groups, _ = load_groups(db)
    return {op: row_errors(recs, 0)[0] for (op, dtype), recs in sorted(groups.items())
            if dtype == "float32" and has_terms(op)}


def main() -> None:
    args = sys.argv[1:]
    if len(args) % 2:
        raise ConfigError("give pairs: a grid database and its retest --rows CSV, for each run")
    runs = [(held_out_rows(db), retest_errors(pairs)) for db, pairs in zip(args[::2], args[1::2])]
    types = sorted(set.intersection(*(set(h) & set(r) for h, r in runs)))
    if not types:
        raise ConfigError("no type with terms has both held-out rows and retest rows in every run "
                          "(is each CSV 'sgdsim ops retest --rows' of its grid?)")
    print("| type | runs | held-out median, pooled | retest median, pooled | ratio | within 1.5x | ratio run by run |")
    print("|---|---:|---:|---:|---:|---|---|")
    within = 0
    for op in types:
        held = np.concatenate([h[op] for h, _ in runs])
        again = np.concatenate([r[op] for _, r in runs])
        ratio = float(np.median(held) / np.median(again))
        each = [float(np.median(h[op]) / np.median(r[op])) for h, r in runs]
        within += ratio <= BAR
        print(f"| {op} | {len(runs)} | {np.median(held):.1%} | {np.median(again):.1%} | {ratio:.3f} | "
              f"{'yes' if ratio <= BAR else '**no**'} | {min(each):.2f}-{max(each):.2f} |")
    print(f"\n{within} of {len(types)} types with terms within {BAR}x their pooled retest")


if __name__ == "__main__":
    run_main(main, "GRID.sqlite RETEST-ROWS.csv [GRID.sqlite RETEST-ROWS.csv ...]", at_least=2)
