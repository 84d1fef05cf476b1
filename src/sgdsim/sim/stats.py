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


def lognormal_factors(rng: np.random.Generator, cv: float, size) -> np.ndarray:
    """Multiplicative noise: lognormal factors of mean 1 and coefficient of variation ``cv``."""
    sigma2 = math.log1p(cv * cv)
    return rng.lognormal(-sigma2 / 2, math.sqrt(sigma2), size=size)


def t95(df: int) -> float:
    return _T95.get(df, 1.96 + 2.5 / df) if df >= 1 else math.inf


def mean_half_width(xs) -> float:
    """Half-width of a 95 % confidence interval for the mean of ``xs``: t·s/sqrt(n)."""
    x = np.asarray(xs, float)
    return t95(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))


def prediction_half_width(xs) -> float:
    """Half-width of a 95 % prediction interval for one more draw like ``xs``:
    t·s·sqrt(1 + 1/n) (inf for fewer than two values)."""
    x = np.asarray(xs, float)
    if len(x) < 2:
        return math.inf
    return t95(len(x) - 1) * float(x.std(ddof=1)) * math.sqrt(1 + 1 / len(x))


def estimate(t0: float, times: np.ndarray, workers: np.ndarray, batch: np.ndarray) -> Estimate:
    """Throughput of step completions ``times`` (sorted, after ``t0``) of ``workers``.

    Point estimate: the sum over workers of batch / (mean time between the worker's own
    completions in the window). Counting completions in [t0, t_end] instead would credit the
    steps other workers had partly done before t0 (an O(W/N) over-estimate in async runs).
    Falls back to the plain time average when a worker completed fewer than 2 steps.

    Interval: batch means over about 20 runs of consecutive completions, each a whole number
    of rounds (W completions) (each batch's examples over
    the time since the previous batch ended), Student t, centred on the point estimate.
    """
    n = len(times)
    examples = batch[workers] if n else np.zeros(0)
    total = float(np.sum(examples))
    if n == 0 or times[-1] <= t0:
        return Estimate(0.0, math.inf, 0.0, n, total)
    duration = float(times[-1] - t0)
    thr = _cycle_rate(times, workers, batch)
    if thr is None:
        thr = total / duration
    # batches of whole rounds (W completions) so that sync barriers are never cut
    W = len(batch)
    per = W * max(1, (n // W) // N_BATCHES)
    nb = n // per
    if nb < 2:
        return Estimate(thr, math.inf, duration, n, total)
    edges = np.arange(nb + 1) * per
    cum = np.concatenate([[0.0], np.cumsum(examples)])
    ends = np.concatenate([[t0], times[edges[1:] - 1]])
    spans = np.diff(ends)
    if np.any(spans <= 0):
        return Estimate(thr, math.inf, duration, n, total)
    per_batch = (cum[edges[1:]] - cum[edges[:-1]]) / spans
    return Estimate(thr, mean_half_width(per_batch), duration, n, total)


def _cycle_rate(times: np.ndarray, workers: np.ndarray, batch: np.ndarray) -> float | None:
    rate = 0.0
    for w in range(len(batch)):
        t = times[workers == w]
        if len(t) < 2 or t[-1] <= t[0]:
            return None
        rate += batch[w] * (len(t) - 1) / (t[-1] - t[0])
    return rate
