"""Time of a default async sweep, as a user runs it: ResNet-50, 1 Gbps, W = 1-16.

Every point uses the defaults (automatic replications on all cores, auto steps). The compiled
core is loaded by one untimed call first ("warm"). Prints a Markdown table; ``--write`` puts
it into docs/benchmarks.md between the SWEEP markers. Target (issue 8): the sweep in <= 10 s.

    python benchmarks/bench_sweep.py [--write]
"""
from __future__ import annotations

import os
import platform
import time

from docblock import publish

import sgdsim
from sgdsim.evaluate import LocalPool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
WORKERS = range(1, 17)


def main() -> None:
    sgdsim.predict(PROFILE, workers=2, bandwidth="1Gbps", replications=1, steps=2, warmup=0)
    rows, t_all = [], time.perf_counter()
    for W in WORKERS:
        t = time.perf_counter()
        p = sgdsim.predict(PROFILE, workers=W, bandwidth="1Gbps")[0]
        rows.append((W, p, time.perf_counter() - t))
    total = time.perf_counter() - t_all
    t = time.perf_counter()  # the CLI's way: one call, the points spread over a process pool
    sgdsim.predict(PROFILE, workers="1-16", bandwidth="1Gbps", executor=LocalPool(os.cpu_count() or 1))
    pooled = time.perf_counter() - t
    lines = ["| workers | examples/s | 95 % interval | replications | ops simulated | wall (s) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for W, p, wall in rows:
        lines.append(f"| {W} | {p.throughput:.1f} | [{p.ci_low:.1f}, {p.ci_high:.1f}] | "
                     f"{p.replications} | {p.ops_simulated:,} | {wall:.2f} |")
    lines += ["", f"Whole sweep: **{total:.1f} s** warm, one point after the other (each point's "
              f"replications on every core); **{pooled:.1f} s** as `sgdsim predict` runs it (one "
              f"call, a process per core, `--jobs`). Measured {time.strftime('%Y-%m-%d')} on "
              f"{platform.machine()} ({os.cpu_count()} cores, Python {platform.python_version()}) "
              f"with `python benchmarks/bench_sweep.py --write`."]
    text = "\n".join(lines)
    publish(DOC, "SWEEP", text)


if __name__ == "__main__":
    main()
