"""The interval levels' margins, fitted on the lab trainer's runs and checked on held-out runs.

For each level L in spec.control.LEVELS and each model (fine, coarse): the simulated runs'
95 % interval is rescaled to L (normal quantiles; the coarse model has none), the model's error
m is fitted by split conformal prediction at L on the 66 single runs of issue 8's 22 points
(rounded up at the fourth decimal: spec.control.MODEL_ERROR_BY_LEVEL, COARSE_ERROR_BY_LEVEL),
and the intervals widened by m are checked on the held-out trainer family (docs/validation/torch)
and on the earlier held-out runs (heldout200*, second-w2, heldout-margin): mean half-width and
share of single runs inside.

    python examples/lab/interval_levels.py      # a second; prints the markdown table
"""
from __future__ import annotations

import csv
import math

from sgdsim.evaluate.margin import conformal_margin, level_scale
from sgdsim.spec.control import LEVELS

FIT = [f"docs/validation/{g}/points.csv" for g in ("async", "cnn", "allreduce", "2ps", "widecnn")]
TORCH = ["docs/validation/torch/points.csv"]
EARLIER = [f"docs/validation/{g}/points.csv" for g in (
    "heldout200", "heldout200b", "heldout200c", "heldout200d", "heldout200e", "second-w2", "heldout-margin")]


def runs(paths: list[str], model: str) -> list[tuple[float, float, float, float]]:
    """(a single run, predicted, low, high) of every measured check of ``model``."""
    out = []
    for path in paths:
        for r in csv.DictReader(open(path, encoding="utf-8")):
            if r["model"] != model or not r["measured"] or r.get("fitted") == "1":
                continue
            p = float(r["predicted"])
            lo, hi = (float(r["interval_low"]), float(r["interval_high"])) if r["interval_low"] else (p, p)
            out += [(float(x), p, lo, hi) for x in r["measured_runs"].split(";")]
    return out


def score(x: float, p: float, lo: float, hi: float, q: float) -> float:
    e = x / p - 1
    h = q * ((hi - p) / p if e >= 0 else (p - lo) / p)
    return math.sqrt(max(0.0, e * e - h * h))


def check(rs, m: float, q: float) -> str:
    width = sum((math.hypot(q * (hi - p) / p, m) + math.hypot(q * (p - lo) / p, m)) / 2
                for _, p, lo, hi in rs) / len(rs)
    inside = sum(score(*r, q) <= m + 1e-12 for r in rs)
    return f"±{width:.1%} | {inside} of {len(rs)} ({inside / len(rs):.0%})"


def main() -> None:
    print("| model | level | margin m | lab trainer (fitted): half-width | inside "
          "| held-out trainer: half-width | inside | earlier held-out: half-width | inside |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in ("fine", "coarse"):
        for level in LEVELS:
            q = level_scale(level)
            fit = runs(FIT, model)
            m = math.ceil(conformal_margin([score(*r, q) for r in fit], level) * 1e4) / 1e4
            print(f"| {model} | {level:.0%} | ±{m:.2%} | {check(fit, m, q)} | "
                  f"{check(runs(TORCH, model), m, q)} | {check(runs(EARLIER, model), m, q)} |")


if __name__ == "__main__":
    main()
