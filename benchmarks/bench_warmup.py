"""How many warm-up steps a replication needs: the start-up transient of async runs.

ResNet-50, 1 Gbps, async PS, default start offsets. For each W, 48 seeds; every run is
measured in windows of 20 steps per worker that start after 0, 5, 10, 20 and 40 steps per
worker. Prints each window's mean throughput over the seeds (and its spread); ``--write``
puts the table into docs/benchmarks.md between the WARMUP markers.

    python benchmarks/bench_warmup.py [--write]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from docblock import publish

from sgdsim.profile.io import load_profile
from sgdsim.sim import SimConfig, WorkerClass
from sgdsim.sim.simulate import _Sim
from sgdsim.spec import Cluster, Control, Link, Strategy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
STARTS = (0, 5, 10, 20, 40)  # warm-up steps per worker before each window
WINDOW = 20
SEEDS = 48


def windows(profile, W: int, seed: int) -> list[float]:
    steps = STARTS[-1] + WINDOW
    sim = _Sim([WorkerClass("w", profile, W)],
               SimConfig(Strategy(), Cluster(Link(1e9 / 8)), Control(seed=seed * 1_000_003, warmup_steps=0)))
    sim.run_until(steps * W, 10**9)
    t = np.concatenate([[0.0], np.asarray(sim.S.comp_t[:steps * W])])
    k = WINDOW * W
    return [k * profile.job.batch_size / (t[s * W + k] - t[s * W]) for s in STARTS]


def main() -> None:
    profile = load_profile(PROFILE)
    head = " | ".join(f"after {s}" for s in STARTS)
    lines = [f"| workers | {head} |", "|---:|" + "---:|" * len(STARTS)]
    t0 = time.perf_counter()
    for W in (3, 5, 10, 16):
        x = np.array([windows(profile, W, seed) for seed in range(SEEDS)])
        lines.append(f"| {W} | " + " | ".join(f"{m:.1f} ± {s:.1f}" for m, s in
                                               zip(x.mean(0), x.std(0, ddof=1))) + " |")
        print(lines[-1], file=sys.stderr)
    lines += ["", f"Examples/s over {SEEDS} seeds (mean ± sd of one window of {WINDOW} steps per "
              f"worker). Measured {time.strftime('%Y-%m-%d')} in {time.perf_counter() - t0:.0f} s "
              "with `python benchmarks/bench_warmup.py --write`."]
    text = "\n".join(lines)
    publish(DOC, "WARMUP", text)


if __name__ == "__main__":
    main()
