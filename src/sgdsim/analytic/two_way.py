"""Two-way traffic on the PS's NIC: the rule, and its mean-field use around the MVA.

A NIC direction carrying n flows while the other direction carries m keeps a share f(n, m) of
its bandwidth. The rule is either measured, a table per direction from ``netbench --lab
--two-way``, or the one-number fit max(0.05, 1 − k·(m − n)) for m > n (the minority
direction's ACKs queue behind the majority's data; docs/validation/async/two-way.md).
``TwoWay.grid`` turns either into one array that the simulator (``sim/sharing/fair.py``) and
the coarse model share.

``netbench`` measures the table with flows that run for seconds in a fixed split. Training
traffic is different: transfers of one model's size start and end all the time, and a NIC
that carries 3 or more of them with both directions busy delivers a nearly flat share of
each direction, whatever the split (traced lab runs: 0.68-0.80 at 4 and 8 workers, where the
table says 0.57-0.99; docs/validation/regimes/, finding 7). ``with_busy`` puts that measured
share (``sgdsim.lab.busy``) into those entries of the table: one share for every flow count, or
one per count from 3 on, the last holding from there on (3 transfers deliver more than 4 or
more: 0.81 against 0.74 of the downlink at 200 Mbit/s; finding 16).

In the coarse model, MVA knows only mean queue lengths, and the penalty lives in the
fluctuations (8 workers average 4 each way but spend time at 1 against 7), so the occupancy is
taken as multinomial: each of the K workers is at the uplink with probability Q_U/K and at the
downlink with Q_D/K, independently. A direction's slowdown is the factor its customers see on
average, E[n·f(n, m)]/E[n]; the network stations' service times are divided by it and the
model solved again until the factors settle.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..spec.two_way import BUSY_FLOWS, busy_share, check_busy, check_table, with_busy  # noqa: F401

MIN_FACTOR = 0.05  # the lab's worst measured case (1 flow against 6) kept 20 %
OUT, IN = 0, 1  # table directions: out of the PS's host (its downlink), into it (its uplink)


@dataclass(frozen=True)
class TwoWay:
    """``penalty`` k of the linear rule, or ``table[d][n][m]``: the measured share of direction
    d (``OUT``, ``IN``) with n flows against m the other way (None where not measured)."""

    penalty: float = 0.0
    table: tuple | None = None

    @property
    def active(self) -> bool:
        return self.penalty > 0 or self.table is not None

    def grid(self, size: int) -> np.ndarray:
        """(2, size, size) shares for n, m < size: the table where measured; where n + m
        exceeds the most flows measured together, the entry with the same proportion of flows
        at that total; without a table, the linear rule. Read-only, shared between calls."""
        return _grid(self, size)


@functools.lru_cache(maxsize=32)  # every replication of a sweep asks for the same grids
def _grid(rule: TwoWay, size: int) -> np.ndarray:
    n = np.arange(size)
    nn, mm = np.meshgrid(n, n, indexing="ij")
    if rule.table is None:
        f = np.maximum(MIN_FACTOR, 1.0 - rule.penalty * np.maximum(0, mm - nn))
        out = np.stack([f, f])
    else:
        out = np.stack([_filled(np.array(rule.table[d], dtype=float), size) for d in (OUT, IN)])
    out.flags.writeable = False
    return out


def _filled(t: np.ndarray, size: int) -> np.ndarray:
    total = max(i + j for i in range(1, len(t)) for j in range(len(t)) if math.isfinite(t[i, j]))
    out = np.ones((size, size))
    for i in range(1, size):
        for j in range(size):
            a, b = i, j
            if a + b > total:  # the same proportion, `total` flows in all, at least 1 here
                a = min(total, max(1, round(i * total / (i + j))))
                b = total - a
            out[i, j] = t[a, b] if a < len(t) and b < len(t) and math.isfinite(t[a, b]) else 1.0
    return out


MAX_ROUNDS, TOLERANCE, DAMPING = 200, 1e-7, 0.5
# Where those steps overshoot into a cycle (two PS past 24 workers on the lab's table jumped
# between two lopsided states, their answer whichever the last round left), smaller ones: the
# same fixed point, to the same residual.
SMALLER_STEPS = ((0.9, 500), (0.98, 2000))
LARGE_FIRST_ROUNDS = 40  # half steps for a count above CACHED_WORKERS (W = 129-256 settle in 33)
SATURATED_FLOWS = 16  # each way: past any measured table, where the rule's shares are flat


def saturated_shares(rule: TwoWay) -> tuple[float, float]:
    """(uplink, downlink) shares of a NIC carrying many transfers both ways, in balance."""
    if not rule.active:
        return 1.0, 1.0
    n = SATURATED_FLOWS
    g = rule.grid(2 * n + 1)
    return float(g[IN][n, n]), float(g[OUT][n, n])


def direction_factors(q_up: float, q_down: float, K: int, grid: np.ndarray) -> tuple[float, float]:
    """Customer-weighted capacity factors (uplink, downlink) of K multinomially placed workers;
    ``grid``: ``TwoWay.grid(K + 1)``."""
    if K < 2:
        return 1.0, 1.0
    p_up, p_down = min(q_up / K, 1.0), min(q_down / K, 1.0)
    if p_up + p_down > 1.0:  # rounding at saturation
        p_up, p_down = p_up / (p_up + p_down), p_down / (p_up + p_down)
    nu, nd, rest, ok, log_coef = (_cached_occupancies(K) if K <= CACHED_WORKERS
                                  else _likely_occupancies(K, p_up, p_down))
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = log_coef + _xlogy(nu, p_up) + _xlogy(nd, p_down) + _xlogy(rest, 1 - p_up - p_down)
    pmf = np.where(ok, np.exp(logp), 0.0)
    return _weighted(pmf, nu, grid[IN][nu, nd]), _weighted(pmf, nd, grid[OUT][nd, nu])


CACHED_WORKERS = 128  # kept for K up to here: 29 MB for all of them; above, only the likely splits
NEGLIGIBLE_LOG = -80.0  # e^-80 of the mode: below it, a count's probability is left out of the sums


def _likely_occupancies(K: int, p_up: float, p_down: float):
    """``_build_occupancies`` restricted to the likely splits (``_likely_counts`` each way). Each
    cell left out holds less than e^-80 of the likeliest one's probability, and there are
    fewer than (K + 1)^2 of them, so the factors equal the full grid's to rounding
    (tests/test_two_way.py). The full grid is a million cells at 1,024 workers, and a fixed
    point asks for it hundreds of times; the likely ones are O(K)."""
    lf = _log_factorials(K)
    return _splits(K, _likely_counts(K, p_up, lf), _likely_counts(K, p_down, lf))


def _likely_counts(K: int, p: float, lf: np.ndarray) -> np.ndarray:
    """The counts n = lo..hi of a Binomial(K, p), or of its size-biased form (probability
    times n: what a factor weighted by its own direction's workers sums), within e^-80 of
    their mode, and one more each side. A contiguous range: both are unimodal."""
    n = np.arange(K + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = lf[K] - lf[n] - lf[K - n] + _xlogy(n, p) + _xlogy(K - n, 1 - p)
        biased = logp + np.log(n)
    keep = logp >= logp.max() + NEGLIGIBLE_LOG
    if biased.max() > -np.inf:  # (nobody this way when p = 0)
        keep |= biased >= biased.max() + NEGLIGIBLE_LOG
    idx = np.flatnonzero(keep)
    if not len(idx):  # no probability to rank (a NaN from upstream): every count, as before
        return n
    return n[max(0, idx[0] - 1):idx[-1] + 2]


_LOG_FACTORIALS = [np.zeros(1)]  # log n! for n = 0..: every K's are a prefix of a longer run's


def _log_factorials(K: int) -> np.ndarray:
    """log n! for n = 0..K, read-only: a prefix of one array kept for the largest K asked
    (a cumulative sum's prefix is the same numbers, so any K gets the same values)."""
    lf = _LOG_FACTORIALS[0]
    if len(lf) <= K:
        lf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, 2 * K + 1)))))
        lf.flags.writeable = False
        _LOG_FACTORIALS[0] = lf
    return lf[:K + 1]


@functools.lru_cache(maxsize=CACHED_WORKERS)  # a fixed point asks for the same K hundreds of times
def _cached_occupancies(K: int):
    return _build_occupancies(K)


def _build_occupancies(K: int):
    """The (n_up, n_down) grid of K workers, the rest (0 where impossible), which splits are
    possible, and the multinomial coefficients' logs. Read-only."""
    n = np.arange(K + 1)
    return _splits(K, n, n)


def _splits(K: int, up: np.ndarray, down: np.ndarray):
    """``_build_occupancies``'s arrays over the counts ``up`` x ``down``, read-only."""
    lf = _log_factorials(K)
    nu, nd = np.meshgrid(up, down, indexing="ij")
    rest = K - nu - nd
    ok = rest >= 0
    rest = np.where(ok, rest, 0)
    log_coef = lf[K] - lf[nu] - lf[nd] - lf[rest]
    for a in (nu, nd, rest, ok, log_coef):
        a.flags.writeable = False
    return nu, nd, rest, ok, log_coef


def _xlogy(x, y: float):
    return np.where(x == 0, 0.0, x * np.log(y) if y > 0 else -np.inf)


def _weighted(pmf, n, f) -> float:
    mean_n = float(np.sum(pmf * n))
    return float(np.sum(pmf * n * f) / mean_n) if mean_n > 0 else 1.0


def scaled_network(rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Service rows (compute, then uplink, update, downlink per PS) with the links slowed by
    ``scale`` (one (uplink, downlink) pair per row, or one pair for all)."""
    out = np.array(rows, dtype=float)
    scale = np.asarray(scale, dtype=float)
    out[:, 1::3] /= np.reshape(scale[..., 0], (-1, 1))
    out[:, 3::3] /= np.reshape(scale[..., 1], (-1, 1))
    return out


def coupled(solve: Callable[[np.ndarray], tuple], Ks, rule: TwoWay,
            queues: Callable[[tuple], tuple]):
    """Solve with the network slowed by the two-way factors, iterated to a fixed point.

    ``solve(scale)`` returns the model's output with (uplink, downlink) factors ``scale``
    (len(Ks), 2); ``queues(output)`` its mean (Q_U, Q_D) per worker count in ``Ks``. Each
    worker count is its own network, so the counts above ``CACHED_WORKERS`` settle apart from
    the others: most of them cycle under the half steps (W = 257-512 on the lab's table), so
    they move to the smaller steps after ``LARGE_FIRST_ROUNDS`` instead of ``MAX_ROUNDS``.
    """
    scale = np.ones((len(Ks), 2))
    out = solve(scale)
    if not rule.active:
        return out
    grid = rule.grid(int(max(Ks)) + 1)
    large = np.asarray(Ks) > CACHED_WORKERS
    for rows, first_rounds in ((np.flatnonzero(~large), MAX_ROUNDS),
                               (np.flatnonzero(large), LARGE_FIRST_ROUNDS)):
        if len(rows):
            scale, out = _settle(solve, Ks, grid, queues, scale, out, rows, first_rounds)
    return out


def _settle(solve, Ks, grid, queues, scale, out, rows, first_rounds: int):
    """``coupled``'s rounds for the worker counts ``rows`` (the others keep their factors):
    half steps, then, where those do not settle, smaller ones. Returns (scale, output)."""
    active = rows
    for damping, rounds in ((DAMPING, first_rounds), *SMALLER_STEPS):
        tolerance = TOLERANCE * (1 - damping) / (1 - DAMPING)  # the same residual at every step size
        for _ in range(rounds):
            q_up, q_down = queues(out)
            target = scale.copy()
            for i in active:
                target[i] = direction_factors(q_up[i], q_down[i], int(Ks[i]), grid)
            new = damping * scale + (1 - damping) * target
            moved = np.max(np.abs(new - scale), axis=1)
            scale = new
            out = solve(scale)
            if moved.max() < tolerance:
                return scale, out
            if damping != DAMPING:  # the smaller steps leave settled worker counts alone
                active = active[moved[active] >= tolerance]
    return scale, out


@functools.lru_cache(maxsize=64)  # every run of a sweep asks for the same rule
def rule_for(rule, ps_count: int | None, shaped: bool = False) -> TwoWay:
    """The models' two-way rule from a cluster's ``TwoWayRule``: the measured table with the
    busy shares where the PS count is one (they were measured on one PS's NIC, which carries
    every transfer; with several each NIC carries a share of the bytes, and the lab's 2-PS runs
    match the table without them: docs/validation/regimes/, finding 7). ``shaped``: the
    simulator's, with the shares that keep the table's shape where they were fitted so."""
    table = rule.table
    if table is not None and (ps_count or 1) == 1:
        if shaped and rule.busy_shape > 0:
            table = with_busy(table, rule.busy_shaped, rule.busy_shape)
        elif rule.busy != (None, None):
            table = with_busy(table, rule.busy)
    return TwoWay(rule.penalty, table)
