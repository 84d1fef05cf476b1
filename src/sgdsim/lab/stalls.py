"""Stalls of TCP transfers against traffic the other way, fitted from two-transfer rounds.

Measured with ``examples/lab/joiner.py`` and a fourth host keeping the other direction busy
(``joiner.py reverse``; docs/validation/regimes/, finding 6): two hosts move M bytes each to or
from a third, the second starting δ after the first. Sharing, equal or not, is
work-conserving: the link carries both transfers' bytes in 2T (T: one transfer alone) from the
first start, or δ + T when the second starts after the first ended. Time beyond that is time
the link stood idle with bytes left: a stall. Shares move the ends between the two
transfers, never the last end, so the idle time measures stalls alone.

The model (``sim/stalls.py``): a transfer that starts against traffic the other way waits,
with probability p, an exponential time of mean m before its first byte moves. ``idle_s``
gives one round's idle time for given waits; ``fit_stalls`` picks the (p, m) whose idle times,
simulated over the rounds' offsets with seeded draws, are closest in distribution (the
Cramér-von Mises distance of the two empirical distributions) to the measured ones.
``fit_waits`` does the same for single transfers that ran alone in their direction
(``examples/lab/incumbent.py``), whose time over a lone transfer's is their wait.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

PROBS = np.round(np.arange(0.0, 1.0001, 0.01), 2)  # the grid fit_stalls searches
MEANS_S = np.round(np.arange(0.02, 3.0001, 0.02), 2)
DRAWS = 64  # simulated rounds per measured round ...
SIM_SAMPLES = 8192  # ... fewer for large sets: the search's cost grows with the samples


@dataclass(frozen=True)
class StallFit:
    prob: float  # of a transfer that starts against traffic the other way
    mean_s: float  # of its exponential wait
    rounds: int  # (or transfers, fit_waits)
    stalled_rounds: int  # measured ones whose link stood idle more than NOISE_S
    distance: float  # Cramér-von Mises distance of the fit's idle times to the measured ones


NOISE_S = 0.05  # idle time below this is timing noise (rounds with an idle return path: ±20 ms)


def idle_s(lone_s, delta_s, wait_a_s, wait_b_s):
    """Link idle time of a round whose transfers (T = ``lone_s`` each, planned at 0 and δ)
    started ``wait`` late, against the round without waits (vectorised)."""
    a = np.asarray(wait_a_s, float)
    b = np.asarray(delta_s, float) + wait_b_s
    first, second = np.minimum(a, b), np.maximum(a, b)
    end = np.where(second >= first + lone_s, second + lone_s, first + 2 * lone_s)
    return end - np.maximum(2 * lone_s, np.asarray(delta_s, float) + lone_s)


def measured_idle_s(lone_s: float, rounds) -> np.ndarray:
    """Idle times of measured rounds (δ, end_A, end_B), ends from A's start."""
    d, ea, eb = (np.array([r[i] for r in rounds], float) for i in range(3))
    return np.maximum(ea, eb) - np.maximum(2 * lone_s, d + lone_s)


def fit_stalls(rounds, lone_s: float, seed: int = 0) -> StallFit:
    """(p, m) from rounds of (δ, end_A, end_B) in seconds, ends counted from A's start."""
    if len(rounds) < 4 or not lone_s > 0:
        raise ConfigError("fit_stalls needs at least four rounds and a positive lone transfer time")
    deltas = np.repeat([r[0] for r in rounds], _draws(len(rounds)))
    rng = np.random.default_rng(seed)
    u_hit, u_len = rng.random((2, deltas.size)), rng.exponential(1.0, (2, deltas.size))

    def idle_of(p, m):  # both transfers start against traffic the other way
        waits = np.where(u_hit < p, u_len * m, 0.0)
        return idle_s(lone_s, deltas, waits[0], waits[1])

    return _best_fit(measured_idle_s(lone_s, rounds), idle_of)


def fit_waits(excess_s, seed: int = 0) -> StallFit:
    """(p, m) from transfers that ran alone in their direction against traffic the other way
    (``examples/lab/incumbent.py``'s arrivals): a stalled one leaves its link idle, so its
    time over a lone transfer's is its wait."""
    if len(excess_s) < 4:
        raise ConfigError("fit_waits needs at least four transfers")
    rng = np.random.default_rng(seed)
    size = len(excess_s) * _draws(len(excess_s))
    u_hit, u_len = rng.random(size), rng.exponential(1.0, size)
    return _best_fit(np.asarray(excess_s, float), lambda p, m: np.where(u_hit < p, u_len * m, 0.0))


def _draws(n: int) -> int:
    return max(8, min(DRAWS, SIM_SAMPLES // n))


def _best_fit(measured_idle: np.ndarray, idle_of) -> StallFit:
    """The grid's (p, m) whose simulated idle times ``idle_of(p, m)`` are closest to these."""
    measured = np.sort(_floor(measured_idle))
    best = None
    for p in PROBS:
        for m in MEANS_S[:1] if p == 0 else MEANS_S:  # without stalls every mean is the same
            dist = _cvm(measured, np.sort(_floor(idle_of(p, m))))
            if best is None or dist < best[0] - 1e-12:
                best = (dist, float(p), float(m))
    dist, p, m = best
    return StallFit(prob=p, mean_s=m if p > 0 else 0.0, rounds=len(measured),
                    stalled_rounds=int(np.sum(measured > 0)), distance=dist)


def _floor(idle: np.ndarray) -> np.ndarray:
    """Idle times within the timing noise count as none, measured and simulated alike."""
    return np.where(idle < NOISE_S, 0.0, idle)


def _cvm(x: np.ndarray, y: np.ndarray) -> float:
    """Cramér-von Mises distance of two sorted samples: mean squared CDF gap over both."""
    both = np.concatenate([x, y])
    fx = np.searchsorted(x, both, side="right") / len(x)
    fy = np.searchsorted(y, both, side="right") / len(y)
    return float(np.mean((fx - fy) ** 2))
