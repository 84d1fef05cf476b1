"""Per operator type, the held-out error against 1.5x the test-retest median of every row timed
again, and the bar a smaller retest would have given (issue 38, docs/ops-runs.md, run 15).

The held-out medians are the forward column of the tables ``terms_cv.py`` and ``prior_cv.py``
print (the latter's "auto" column: the estimator ``ops train`` ships, for the types without
terms); the retest is ``sgdsim ops retest --rows``'s CSV.

    sgdsim ops retest --db grid.sqlite --samples 100 --rows pairs.csv
    python examples/ops/terms_cv.py grid.sqlite > terms.md
    python examples/ops/prior_cv.py grid.sqlite --ops gelu,nll_loss,relu > prior.md
    python examples/ops/retest_bar.py pairs.csv terms.md prior.md [--subset 20] [--draws 2000]
"""
from __future__ import annotations

import argparse
import csv
from collections import defaultdict

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.retest import differences


def retest_errors(path: str) -> dict[str, np.ndarray]:
    """Per type, |again / stored − 1| of each row's forward, over their references (as ``ops
    retest`` compares them)."""
    pairs = defaultdict(list)
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                pairs[r["op"]].append((float(r["fwd_rel"]), float(r["fwd_again_rel"])))
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigError(f"{path}: not a CSV of 'sgdsim ops retest --rows' ({exc})") from None
    return {op: differences(*zip(*v)) for op, v in pairs.items()}


def held_out(paths: list[str]) -> dict[str, float]:
    """Forward held-out medians from the tables of terms_cv.py (first column: forward / backward)
    and prior_cv.py (the "auto" column); a type in both keeps the first file's figure."""
    out: dict[str, float] = {}
    for path in paths:
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
        for line in lines:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.startswith("| ") or cells[0] == "operator" or len(cells) < 2:
                continue
            figure = cells[3] if len(cells) > 3 else cells[1].split("/")[0]  # prior_cv: "auto"
            try:
                out.setdefault(cells[0], float(figure.strip().rstrip("%")) / 100)
            except ValueError:
                raise ConfigError(f"{path}: not a table of terms_cv.py or prior_cv.py "
                                  f"({line[:60]})") from None
    return out


def bar_rows(errors: dict[str, np.ndarray], held: dict[str, float], subset: int, draws: int,
             rng: np.random.Generator) -> list[dict]:
    """Per type: the held-out median, the retest median of every row and its 1.5x bar, and the
    bar of ``draws`` random ``subset``-row retests (5th and 95th percentiles, and how often one
    is at least the held-out median)."""
    rows = []
    for op in sorted(errors):
        e = errors[op]
        small = 1.5 * np.array([np.median(rng.choice(e, min(subset, e.size), replace=False))
                                for _ in range(draws)])
        h = held.get(op, float("nan"))
        rows.append({"op": op, "rows": e.size, "held": h, "retest": float(np.median(e)),
                     "bar": 1.5 * float(np.median(e)), "small_lo": float(np.percentile(small, 5)),
                     "small_hi": float(np.percentile(small, 95)), "small_pass": float(np.mean(small >= h))})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", help="sgdsim ops retest --rows CSV")
    ap.add_argument("tables", nargs="+", help="terms_cv.py's and prior_cv.py's printed tables")
    ap.add_argument("--subset", type=int, default=20, help="rows of the smaller retest (default 20)")
    ap.add_argument("--draws", type=int, default=2000, help="random subsets drawn (default 2000)")
    ap.add_argument("--seed", type=int, default=15, help="seed of the subsets (default 15)")
    args = ap.parse_args()
    rows = bar_rows(retest_errors(args.pairs), held_out(args.tables), args.subset, args.draws,
                    np.random.default_rng(args.seed))
    print(f"| type | rows retested | held-out forward median | retest median | bar (1.5x) | within | "
          f"{args.subset}-row bar, 5th-95th percentile | a {args.subset}-row bar passes it |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        within = "yes" if r["held"] <= r["bar"] else "**no**"
        print(f"| {r['op']} | {r['rows']} | {r['held']:.1%} | {r['retest']:.1%} | {r['bar']:.1%} | {within} | "
              f"{r['small_lo']:.1%}-{r['small_hi']:.1%} | {r['small_pass']:.0%} |")
    print(f"\n{sum(r['held'] <= r['bar'] for r in rows)} of {len(rows)} types within 1.5x their retest")


if __name__ == "__main__":
    run_main(main, "PAIRS.csv TABLE.md [TABLE.md ...]", at_least=2)
