"""A device's step factor, held out by run: how far a training step runs above the sum of its
calls' exact times (``measured_ms / exact_ms`` in ``estimate_models.py``'s models.csv), and
what the estimator's step error would be if each run's estimates were scaled by the median
factor of the other runs of its CPU (the CPU: the directory name's second word,
``models-xeon-...``). Nothing is timed; the committed step tables are read as they are.

    python examples/ops/step_factor.py docs/validation/ops/models-*/models.csv [--large]
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
from collections import defaultdict

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError

WITHIN = 0.15  # the step target's band


def read_run(path: str) -> list[dict]:
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: no such file (estimate_models.py --out writes a models.csv)")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"measured_ms", "exact_ms", "estimator_ms"} <= set(rows[0]):
        raise ConfigError(f"{path}: not a step table (measured_ms, exact_ms, estimator_ms)")
    return [{"model": r["model"], "measured": float(r["measured_ms"]), "exact": float(r["exact_ms"]),
             "estimator": float(r["estimator_ms"])} for r in rows]


def cpu_of(path: str) -> str | None:
    words = os.path.basename(os.path.dirname(os.path.abspath(path))).split("-")
    return words[1] if len(words) > 1 else None


def summary(cpu: str, runs: dict[str, list[dict]]) -> str:
    plain, scaled, factors = [], [], []
    for name, rows in runs.items():
        others = [r["measured"] / r["exact"] for other, rs in runs.items() if other != name for r in rs]
        factor = statistics.median(others) if others else 1.0
        factors += [r["measured"] / r["exact"] for r in rows]
        plain += [abs(r["estimator"] / r["measured"] - 1) for r in rows]
        scaled += [abs(r["estimator"] * factor / r["measured"] - 1) for r in rows]
    deciles = statistics.quantiles(factors, n=10) if len(factors) > 1 else [factors[0]] * 9

    def stat(errs):
        return (f"{statistics.mean(errs):.1%} / {statistics.median(errs):.1%} | "
                f"{sum(e <= WITHIN for e in errs)} of {len(errs)}")
    return (f"| {cpu} | {len(runs)} | {statistics.median(factors):.3f} ({deciles[0]:.3f}-{deciles[-1]:.3f}) "
            f"| {stat(plain)} | {stat(scaled)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", help="estimate_models.py --out's models.csv files")
    ap.add_argument("--large", action="store_true", help="leave out zoo:mlp (a 1-4 ms step)")
    args = ap.parse_args()
    by_cpu: dict[str, dict[str, list[dict]]] = defaultdict(dict)
    for d in args.tables:
        rows = [r for r in read_run(d) if not (args.large and r["model"].startswith("zoo:mlp"))]
        if (cpu := cpu_of(d)) is not None and rows:
            by_cpu[cpu][d] = rows
    if not by_cpu:
        raise ConfigError("no table's directory names a CPU (models-CPU-.../models.csv)")
    print("| CPU | runs | step / exact sum, median (10th-90th percentile) | estimator |error| "
          "mean / median | within 15 % | scaled by the other runs' factor: mean / median | "
          "within 15 % |\n|---|---:|---|---|---:|---|---:|")
    for cpu, runs in sorted(by_cpu.items()):
        print(summary(cpu, runs))


if __name__ == "__main__":
    run_main(main)
