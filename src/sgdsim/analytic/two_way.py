"""Two-way traffic in the coarse async model: a mean-field fixed point around the MVA.

The simulator slows a NIC direction with n flows to max(0.05, 1 − k·(m − n)) of its bandwidth
while m > n flows run the other way (``sim/sharing/fair.py``). MVA knows only mean queue
lengths, and the penalty lives in the fluctuations (8 workers average 4 each way but spend
time at 1 against 7), so the occupancy is taken as multinomial: each of the K workers is at
the uplink with probability Q_U/K and at the downlink with Q_D/K, independently. A direction's
slowdown is the factor its customers see on average, E[n·f(n, m)]/E[n]; the network stations'
service times are divided by it and the model solved again until the factors settle.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..sim.sharing.fair import MIN_TWO_WAY_FACTOR as MIN_FACTOR

MAX_ROUNDS, TOLERANCE, DAMPING = 200, 1e-7, 0.5


def direction_factors(q_up: float, q_down: float, K: int, k: float) -> tuple[float, float]:
    """Customer-weighted capacity factors (uplink, downlink) of K multinomially placed workers."""
    if k <= 0 or K < 2:
        return 1.0, 1.0
    p_up, p_down = min(q_up / K, 1.0), min(q_down / K, 1.0)
    if p_up + p_down > 1.0:  # rounding at saturation
        p_up, p_down = p_up / (p_up + p_down), p_down / (p_up + p_down)
    n = np.arange(K + 1)
    nu, nd = np.meshgrid(n, n, indexing="ij")
    rest = K - nu - nd
    ok = rest >= 0
    lf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, K + 1)))))
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = (lf[K] - lf[nu] - lf[nd] - lf[np.where(ok, rest, 0)]
                + _xlogy(nu, p_up) + _xlogy(nd, p_down) + _xlogy(np.where(ok, rest, 0), 1 - p_up - p_down))
    pmf = np.where(ok, np.exp(logp), 0.0)
    f_up = np.maximum(MIN_FACTOR, 1.0 - k * np.maximum(0, nd - nu))
    f_down = np.maximum(MIN_FACTOR, 1.0 - k * np.maximum(0, nu - nd))
    return _weighted(pmf, nu, f_up), _weighted(pmf, nd, f_down)


def _xlogy(x, y: float):
    return np.where(x == 0, 0.0, x * np.log(y) if y > 0 else -np.inf)


def _weighted(pmf, n, f) -> float:
    mean_n = float(np.sum(pmf * n))
    return float(np.sum(pmf * n * f) / mean_n) if mean_n > 0 else 1.0


def scaled_network(rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Service rows (compute, uplink, update, downlink) with the links slowed by ``scale``
    (one (uplink, downlink) pair per row, or one pair for all)."""
    out = np.array(rows, dtype=float)
    out[:, 1] /= scale[..., 0]
    out[:, 3] /= scale[..., 1]
    return out


def coupled(solve: Callable[[np.ndarray], tuple], Ks, k: float,
            queues: Callable[[tuple], tuple]):
    """Solve with the network slowed by the two-way factors, iterated to a fixed point.

    ``solve(scale)`` returns the model's output with (uplink, downlink) factors ``scale``
    (len(Ks), 2); ``queues(output)`` its mean (Q_U, Q_D) per worker count in ``Ks``.
    """
    scale = np.ones((len(Ks), 2))
    out = solve(scale)
    if k <= 0:
        return out
    for _ in range(MAX_ROUNDS):
        q_up, q_down = queues(out)
        target = np.array([direction_factors(qu, qd, int(K), k)
                           for qu, qd, K in zip(q_up, q_down, Ks)])
        new = DAMPING * scale + (1 - DAMPING) * target
        done = np.max(np.abs(new - scale)) < TOLERANCE
        scale = new
        out = solve(scale)
        if done:
            break
    return out
