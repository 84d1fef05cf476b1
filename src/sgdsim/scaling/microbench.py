"""The canonical micro-benchmark of KDD'15 Fig. 5, measured on this machine.

Feed-forward of a fully connected segment: y_i += w_ij·a_j for every connection, then
a_i = f(y_i). Timed as numpy runs it on one core (einsum's matrix-vector loop, then tanh), the same layout
for every size, so that the per-operation costs include the cache effects the paper wants:

- C_muladd: the product's time per multiply-add, fitted over several segment sizes (least
  squares through the origin, so per-call overheads do not count as work);
- C_act: tanh per neuron; C_err: the error term f'(y)·Σδ = (1 − a²)·δ per neuron;
- C_interf(H): H threads each running the canonical code on their own data at once, their
  time over one thread's (numpy releases the GIL in these kernels).
"""
from __future__ import annotations

import os
import platform
import threading
import time

import numpy as np

from .model import Constants

SIZES = ((256, 1024), (512, 2048), (1024, 4096))  # (neurons, inputs) per segment


def _best_s(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _product(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """y = W·a in numpy's own single-threaded loop (einsum without BLAS): one core per run,
    as Fig. 5's loop, so that the threaded run measures interference, not BLAS's threads."""
    return np.einsum("ij,j->i", w, a, optimize=False)


def _canonical(rng: np.random.Generator, n: int, m: int):
    w = rng.standard_normal((n, m))
    a = rng.standard_normal(m)
    d = rng.standard_normal(n)
    return w, a, d


def measure_constants(rng: np.random.Generator, max_threads: int | None = None,
                      repeat: int = 20, sizes=SIZES) -> Constants:
    muladds, times = [], []
    for n, m in sizes:
        w, a, _ = _canonical(rng, n, m)
        times.append(_best_s(lambda: _product(w, a), repeat))
        muladds.append(n * m)
    x, t = np.array(muladds, float), np.array(times)
    muladd_s = float(x @ t / (x @ x))
    n = sizes[-1][0] * 64
    y = rng.standard_normal(n)
    d = rng.standard_normal(n)
    act_s = _best_s(lambda: np.tanh(y), repeat) / n
    err_s = _best_s(lambda: (1.0 - y * y) * d, repeat) / n
    threads = max_threads or os.cpu_count() or 1
    interference = tuple(_interference(rng, h, repeat) for h in range(1, threads + 1))
    return Constants(muladd_s, act_s, err_s, interference, measured={
        "machine": platform.machine(), "cpus": os.cpu_count(), "numpy": np.__version__,
        "date": time.strftime("%Y-%m-%d"), "sizes": [list(s) for s in sizes]})


def _interference(rng: np.random.Generator, h: int, repeat: int) -> float:
    """C_interf(h): wall time of h concurrent canonical runs over one run's."""
    n, m = SIZES[-1]
    data = [_canonical(rng, n, m) for _ in range(h)]

    def work(w, a, d):
        for _ in range(8):
            np.tanh(_product(w, a))

    def concurrent():
        ts = [threading.Thread(target=work, args=args) for args in data]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    one = _best_s(lambda: work(*data[0]), repeat)
    return 1.0 if h == 1 else max(1.0, _best_s(concurrent, repeat) / one)
