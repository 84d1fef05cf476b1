"""Where independent replications start: a low-discrepancy design over the async start offsets.

Async workers keep the offsets they start with for a long time: under fair sharing a convoy
(workers transferring together) is neither broken nor formed, so one run's throughput is a
function of its start (2 MLP workers on the lab: 9.5 examples/s in lock-step, 18 interleaved,
docs/validation/README.md). Random starts then make the mean of a handful of replications a
noisy estimate of the average over starts (8 random starts missed it by 15 % there). Starts
taken from a Kronecker sequence (Roberts' R_d: point i is frac(shift + i·α), α_j = g^-j with g
the root of x^(d+1) = x + 1) cover the offsets evenly for every prefix of replications, so
rounds can stop at any point; a random shift drawn from the seed keeps seeds independent.
"""
from __future__ import annotations

import math

import numpy as np


def _alpha(d: int) -> np.ndarray:
    g = 2.0
    for _ in range(60):  # fixed point of g = (1 + g)^(1/(d+1)), converges from 2 for every d
        g = (1.0 + g) ** (1.0 / (d + 1))
    # math.pow, not numpy's power on an array: numpy computes that with the processor's own
    # vector library where it has one (AVX-512), which differs from the C library's pow in the
    # last bit for some j, and a chaotic async run turns one bit of one start into another
    # mean; the C library's pow gives the same starts on every machine we have run on
    return np.array([math.pow(1.0 / g, j) for j in range(1, d + 1)]) % 1.0


def start_points(seed: int, dims: int, indices) -> list[tuple[float, ...]]:
    """Unit-cube points (one per replication index) for ``dims`` workers' offsets."""
    if dims <= 0:
        return [() for _ in indices]
    shift = np.random.default_rng(np.random.SeedSequence([seed, 11])).uniform(size=dims)
    alpha = _alpha(dims)
    return [tuple(float(x) for x in (shift + (i + 1) * alpha) % 1.0) for i in indices]
