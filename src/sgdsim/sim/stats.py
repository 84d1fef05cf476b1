"""Throughput as a time average, with a batch-means confidence interval."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# two-sided 95 % Student t quantiles by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093}
N_BATCHES = 20


@dataclass(frozen=True)
class Estimate:
    throughput: float  # examples/s over the measurement window
    half_width: float  # 95 % CI half-width (batch means)
    duration_s: float
    steps: int
    examples: float

    @property
    def rel_half_width(self) -> float:
        return self.half_width / self.throughput if self.throughput > 0 else math.inf


def t95(df: int) -> float:
    return _T95.get(df, 1.96 + 2.5 / df) if df >= 1 else math.inf


def estimate(t0: float, times: np.ndarray, examples: np.ndarray) -> Estimate:
    """Time-average throughput of step completions ``times`` (sorted) after ``t0``.

    Batches are runs of consecutive completions; each batch's throughput is its examples over
    the time since the previous batch ended. The interval is centred on the time average.
    """
    n = len(times)
    if n == 0 or times[-1] <= t0:
        return Estimate(0.0, math.inf, 0.0, n, float(np.sum(examples)))
    total = float(np.sum(examples))
    duration = float(times[-1] - t0)
    thr = total / duration
    nb = min(N_BATCHES, n)
    if nb < 2:
        return Estimate(thr, math.inf, duration, n, total)
    edges = np.linspace(0, n, nb + 1).round().astype(int)
    cum = np.concatenate([[0.0], np.cumsum(examples)])
    ends = np.concatenate([[t0], times[edges[1:] - 1]])
    spans = np.diff(ends)
    if np.any(spans <= 0):
        return Estimate(thr, math.inf, duration, n, total)
    batch = (cum[edges[1:]] - cum[edges[:-1]]) / spans
    hw = t95(nb - 1) * float(np.std(batch, ddof=1)) / math.sqrt(nb)
    return Estimate(thr, hw, duration, n, total)
