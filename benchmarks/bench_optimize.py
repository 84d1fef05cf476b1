"""Speed of the KDD'15 scalability optimizer (``sgdsim optimize``), issue 9's target: N = 64
machines, L = 50 layers in <= 10 s. Also how the time grows with N and L (the DP is
O(L·K·N_wr²) per split of the machines, O(L·K·N³) in all).

    python benchmarks/bench_optimize.py [--write]    (--write updates docs/benchmarks.md)
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np
from docblock import publish

from sgdsim.scaling import search
from sgdsim.scaling.layers import load_layers, synthetic
from sgdsim.scaling.model import Network, load_constants
from sgdsim.scaling.search import Problem, optimize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
CONSTANTS = load_constants(os.path.join(ROOT, "src", "sgdsim", "data", "kdd_constants.json"))


def layers_of(L: int):
    """L layers cut from ResNet-50's 54 (repeated when L > 54)."""
    base, _ = load_layers("resnet50")
    return tuple((base * (L // len(base) + 1))[:L]) if L != 50 else tuple(base[:50])


def timed(layers, N: int, K: int = 8) -> float:
    search._TABLES.clear()  # cold: the mapping tables are part of the work
    prob = Problem(layers, N, K, CONSTANTS, Network(10e9, 50e-6), 1_281_167, 128)
    t = time.perf_counter()
    optimize(prob)
    return time.perf_counter() - t


def main() -> None:
    rows = ["| machines N | layers L | cores K | wall (s) |", "|---:|---:|---:|---:|"]
    for N in (8, 16, 32, 64):
        rows.append(f"| {N} | 50 | 8 | {timed(layers_of(50), N):.2f} |")
    for L in (10, 25, 100):
        rows.append(f"| 64 | {L} | 8 | {timed(layers_of(L), 64):.2f} |")
    small = synthetic([(1e3, 1e6, 1e5, True)] * 50)
    rows.append(f"| 64 | 50 (synthetic) | 8 | {timed(tuple(small), 64):.2f} |")
    ts = [timed(layers_of(50), N) for N in (32, 64)]
    rows += ["", f"Doubling N multiplies the time by {ts[1] / ts[0]:.1f} (the DP's bound: 8, "
             f"N³ with the splits; the splits with many workers per replica dominate). Measured "
             f"{time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores, numpy "
             f"{np.__version__}) with `python benchmarks/bench_optimize.py --write`."]
    publish(DOC, "OPTIMIZE", "\n".join(rows))


if __name__ == "__main__":
    main()
