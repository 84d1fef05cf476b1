"""Mean value analysis (MVA) of the closed queueing network of TPDS §2.1 (Fig. 5).

Class k is worker k; its task circulates through L stations with mean service times
``S[k, l]`` (0 where class k does not visit station l). A station is one of

* ``"delay"``: infinite server (a worker's own compute), ``T_k = S_k``;
* ``"ps"``: processor sharing, TPDS Eq. 1, ``T_k = S_k (1 + sum_j N_j(n - e_k))``;
* ``"fcfs"``: TPDS Eq. 2, FCFS with a deterministic-residual correction,
  ``T_k = S_k + sum_j S_j (N_j(n - e_k) - rho_j(n - e_k) / 2)``;

closed by Little's law ``N_k = X_k T_k``, ``rho_k = X_k S_k`` and ``X_k = n_k / sum_l T_k^l``.
Solvers: :func:`mva_exact` (Reiser-Lavenberg recursion over all population vectors),
:func:`mva_symmetric` (K identical workers, O(K L)), :func:`mva_schweitzer` (Bard-Schweitzer
approximate MVA) and the dispatcher :func:`solve`. See docs/mva.md.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..compiled import CORE, F64, I64, core

#: The station disciplines, named once here (the registry of station kinds): a delay station
#: (infinite server), processor sharing (Eq. 1) and FCFS (Eq. 2).
PS, FCFS, DELAY = "ps", "fcfs", "delay"
KINDS = (DELAY, PS, FCFS)

#: Largest number of population vectors :func:`mva_exact` accepts (2**21: K = 21 workers of
#: population 1). It bounds memory, one float per state and queueing station (48 MiB with
#: three), and time: ~2.8 s at K = 21 on the 2-core reference machine, x2 per extra worker.
MAX_EXACT_STATES = 2**21

#: :func:`solve` uses :func:`mva_exact` for heterogeneous workers up to this K and
#: :func:`mva_schweitzer` above it: K = 19 is the largest with exact MVA under 1 s (0.6-0.7 s;
#: 1.3-1.4 s at K = 20) for the 4-station async-SGD network on the 2-core reference machine
#: (benchmarks/bench_mva.py, docs/mva.md), where Schweitzer takes milliseconds.
EXACT_LIMIT = 19


@dataclass(frozen=True)
class MvaResult:
    """Mean values at the full population; arrays are per class (rows) and station (columns)."""

    X: np.ndarray  # (K,) throughput of each class (completions/s)
    T: np.ndarray  # (K, L) response time per visit
    N: np.ndarray  # (K, L) mean number of class-k customers at station l
    U: np.ndarray  # (K, L) utilization of station l by class k, X_k S_k^l
    method: str  # "exact", "symmetric" or "schweitzer"
    iterations: int = 0  # fixed-point iterations (Schweitzer only)

    @property
    def throughput(self) -> float:
        """Job throughput, the sum of the per-class throughputs (TPDS Eq. 3 and 4)."""
        return float(np.sum(self.X))


# ----------------------------------------------------------------------------- inputs

@functools.lru_cache(maxsize=64)
def _kind_masks(kinds: tuple) -> tuple[np.ndarray, np.ndarray]:
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"unknown station kind(s) {bad}; expected one of {KINDS}")
    return (np.array([k == PS for k in kinds], dtype=float),
            np.array([k == FCFS for k in kinds], dtype=float))


def _matrix(S, kinds: Sequence[str], ndim: int = 2) -> np.ndarray:
    S = np.asarray(S, dtype=float)
    if S.ndim != ndim or 0 in S.shape:
        raise ValueError(f"S must be a non-empty {ndim}-D array of service times, "
                         f"got shape {S.shape}")
    if isinstance(kinds, str) or len(kinds) != S.shape[-1]:
        raise ValueError(f"kinds must list one kind per station ({S.shape[-1]}), got {kinds!r}")
    _kind_masks(tuple(kinds))
    if not (np.isfinite(S).all() and (S >= 0).all()):
        raise ValueError("service times must be finite and >= 0")
    return S


def _populations(populations, S: np.ndarray) -> np.ndarray:
    K = S.shape[0]
    pops = np.ones(K, dtype=np.int64) if populations is None else np.asarray(populations)
    if pops.shape != (K,) or np.any(pops < 0) or np.any(pops != np.round(pops)):
        raise ValueError(f"populations must be {K} non-negative integers, got {populations!r}")
    pops = pops.astype(np.int64)
    idle = (pops > 0) & (S.sum(axis=1) == 0)
    if np.any(idle):  # such a class would complete infinitely often
        raise ValueError(f"classes {np.flatnonzero(idle).tolist()} have zero total service time")
    return pops


def _coefficients(S: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """Eq. 1, Eq. 2 and the delay station as one rule, so that the solvers ignore kinds:

        T_k(n) = S_k + A_k W(n - e_k),     W(n) = sum_j X_j(n) (C_j T_j(n) - D_j)

    ps:   A = S, C = 1, D = 0           so W = sum_j N_j                      (Eq. 1)
    fcfs: A = [S > 0], C = S, D = S²/2  so W = sum_j S_j (N_j - rho_j / 2)  (Eq. 2)
    delay: A = C = D = 0 (no queueing). A is 0 where S is 0: Eq. 2 would otherwise charge
    a waiting time to a class that never visits the station.
    Returns the stack S, A, C, D, shape (4,) + S.shape.
    """
    ps, fcfs = _kind_masks(tuple(kinds))
    fs = fcfs * S
    return np.array([S, ps * S + fcfs * (S > 0), ps + fs, 0.5 * fs * S])


def _result(S, X, T, method: str, iterations: int = 0) -> MvaResult:
    return MvaResult(X=X, T=T, N=X[:, None] * T, U=X[:, None] * S, method=method,
                     iterations=iterations)


# ----------------------------------------------------------------------------- exact

def _states_by_level(radix: np.ndarray, strides: np.ndarray, n_states: int):
    """State indices sorted by total population, and the level boundaries: the recursion
    needs every n - e_k (one level down) before n."""
    idx = np.arange(n_states, dtype=np.int64)
    # small integer keys make numpy's stable argsort a radix sort
    level = np.zeros(n_states, dtype=np.int16 if radix.sum() < 2**15 else np.int64)
    for r, s in zip(radix, strides):
        level += ((idx // s) % r).astype(level.dtype)
    order = np.argsort(level, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(level))))
    return order, bounds


def mva_exact(S, kinds: Sequence[str], populations=None) -> MvaResult:
    """Exact multi-class MVA (Reiser and Lavenberg, 1980; TPDS §2.1 with Eqs. 1-2).

    Evaluates Eq. 1 (ps), Eq. 2 (fcfs) and T = S (delay) for every population vector
    0 <= n <= ``populations`` (default all ones: the TPDS case n in {0,1}^K), in order of
    total population. States are mixed-radix indices (bitmasks in the {0,1}^K case); each
    level is evaluated with numpy over all its states at once, one class at a time, and each
    state keeps only W(n) per queueing station (see :func:`_coefficients`).

    Raises ValueError beyond :data:`MAX_EXACT_STATES` population vectors.
    """
    S = _matrix(S, kinds)
    pops = _populations(populations, S)
    K, L = S.shape
    radix = pops + 1
    n_states = float(np.prod(radix.astype(float)))  # float: no integer overflow at large K
    if n_states > MAX_EXACT_STATES:
        raise ValueError(f"exact MVA needs {n_states:.3g} population vectors, more than "
                         f"MAX_EXACT_STATES = {MAX_EXACT_STATES}; use mva_schweitzer")
    n_states = int(n_states)
    X_out, T_out = np.zeros(K), np.zeros((K, L))
    if n_states == 1:
        return _result(S, X_out, T_out, "exact")
    strides = np.cumprod(np.concatenate(([1], radix[:-1])))
    # Delay stations take no part in the recursion (A = 0): keep only queueing stations,
    # station-major so that every operation below runs on contiguous 1-D rows.
    queue = np.array([k != DELAY for k in kinds])
    delay_time = S[:, ~queue].sum(axis=1)
    Sq, A, C, D = (c[:, queue].T.copy() for c in _coefficients(S, kinds))
    W = np.zeros((int(queue.sum()), n_states))
    order, bounds = _states_by_level(radix, strides, n_states)
    T_out[:] = S
    for lo, hi in zip(bounds[1:-1], bounds[2:]):  # level 0 is the empty network: W = 0
        idx = order[lo:hi]
        acc = np.zeros((W.shape[0], idx.size))
        # A loop over classes, not a gather over (state, class) pairs: gathering the
        # per-class coefficients cost more than all the arithmetic.
        for k in np.flatnonzero(pops):
            n_k = (idx // strides[k]) % radix[k]
            sel = np.flatnonzero(n_k)
            T = Sq[:, k, None] + A[:, k, None] * W[:, idx[sel] - strides[k]]
            X = n_k[sel] / (delay_time[k] + T.sum(axis=0))
            acc[:, sel] += X * (C[:, k, None] * T - D[:, k, None])
            if hi == n_states:  # the last level is the full population alone
                X_out[k], T_out[k, queue] = X[0], T[:, 0]
        W[:, idx] = acc
    T_out[pops == 0] = 0.0
    return _result(S, X_out, T_out, "exact")


# ----------------------------------------------------------------------------- symmetric

@core
def _symmetric_kernel(s: F64, a: F64, c: F64, d: F64, K: int, t: F64, w: F64, curve: F64) -> None:
    """Single-class MVA recursion m = 1..K on the coefficients of one class; writes the
    total throughput X(m) to curve[m-1] and leaves T(K) in t."""
    L = len(s)
    for l in range(L):
        w[l] = 0.0
    for m in range(1, K + 1):
        r = 0.0
        for l in range(L):
            t[l] = s[l] + a[l] * w[l]
            r += t[l]
        x = m / r
        curve[m - 1] = x
        for l in range(L):
            w[l] = x * (c[l] * t[l] - d[l])


def _symmetric(S_row, kinds: Sequence[str], K: int):
    if int(K) != K or K < 1:
        raise ValueError(f"K must be a positive integer, got {K!r}")
    s = _matrix(S_row, kinds, ndim=1)
    if not s.sum() > 0:
        raise ValueError("the class has zero total service time")
    coef = _coefficients(s, kinds)
    t, curve = np.empty(len(s)), np.empty(int(K))
    if CORE is not None:
        rows = (np.ascontiguousarray(row) for row in coef)
        CORE.symmetric_kernel(*rows, int(K), t, np.empty(len(s)), curve)
    else:  # plain Python: lists index faster
        _symmetric_kernel(*coef.tolist(), int(K), t, np.empty(len(s)), curve)
    return s, t, curve


def mva_symmetric(S_row, kinds: Sequence[str], K: int) -> MvaResult:
    """Exact MVA for K identical workers (classes of population 1), in O(K L).

    By symmetry, N_j(n) depends only on |n| in the {0,1}^K recursion, and the sums over j
    in Eq. 1 and Eq. 2 at n - e_k are the totals of a network with |n| - 1 customers
    (for Eq. 2, sum_j S_j rho_j = S X_total S). So the recursion is the single-class MVA
    with population m = 1..K, the same as :func:`mva_exact` with rows equal (or with one
    class of population K). Returns (K,) and (K, L) arrays whose rows are all equal.
    """
    s, t, curve = _symmetric(S_row, kinds, K)
    K = int(K)
    x = curve[-1] / K
    rows = np.array([t, x * t, x * s])
    T, N, U = np.repeat(rows[:, None], K, axis=1)
    return MvaResult(X=np.full(K, x), T=T, N=N, U=U, method="symmetric")


@core
def _sweep_kernel(S: F64, A: F64, C: F64, D: F64, L: int, Ks: I64, X_out: F64, T_out: F64, t: F64,
                  w: F64) -> None:
    """The symmetric recursion once per row i, up to Ks[i] customers: O(sum(Ks) L). The
    (rows, L) arrays come flat, row after row (the compiled core takes 1-D arrays)."""
    for i in range(len(Ks)):
        for l in range(L):
            w[l] = 0.0
        x = 0.0
        for m in range(1, Ks[i] + 1):
            r = 0.0
            for l in range(L):
                t[l] = S[i * L + l] + A[i * L + l] * w[l]
                r += t[l]
            x = m / r
            for l in range(L):
                w[l] = x * (C[i * L + l] * t[l] - D[i * L + l])
        X_out[i] = x
        for l in range(L):
            T_out[i * L + l] = t[l]


def symmetric_sweep(S_rows, kinds: Sequence[str], Ks) -> tuple[np.ndarray, np.ndarray]:
    """Exact MVA of Ks[i] identical workers with service row S_rows[i], for every i at once
    (same reduction as :func:`mva_symmetric`). Returns the job throughput (n,) and the
    per-visit response times (n, L). One compiled call for a whole worker-count sweep."""
    S = _matrix(np.atleast_2d(np.asarray(S_rows, dtype=float)), kinds)
    Ks = np.asarray(Ks, dtype=np.int64)
    if np.any(Ks < 1):
        raise ValueError("worker counts must be positive")
    X, T = np.empty(len(S)), np.empty(S.shape)
    if CORE is not None:  # one compiled call for the whole sweep
        flat = (np.ascontiguousarray(c).ravel() for c in _coefficients(S, kinds))
        scratch = np.empty(S.shape[1]), np.empty(S.shape[1])
        CORE.sweep_kernel(*flat, S.shape[1], Ks, X, T.reshape(-1), *scratch)
        return X, T
    for i in range(len(S)):  # plain Python: the 1-D kernel on lists is faster
        s, t, curve = _symmetric(S[i], kinds, int(Ks[i]))
        X[i], T[i] = curve[-1], t
    return X, T


def symmetric_curve(S_row, kinds: Sequence[str], K_max: int) -> np.ndarray:
    """Job throughput of K = 1..K_max identical workers (TPDS Eq. 3/4), from one recursion:
    the solution for K_max passes through every smaller K."""
    return _symmetric(S_row, kinds, K_max)[2]


# ----------------------------------------------------------------------------- approximate

def mva_schweitzer(S, kinds: Sequence[str], populations=None, tol: float = 1e-10,
                   max_iter: int = 10000) -> MvaResult:
    """Bard-Schweitzer approximate MVA (Bard 1979, Schweitzer 1979; TPDS [29]).

    Replaces the recursion by a fixed point at the full population n: N_j(n - e_k) is
    estimated as N_j(n) for j != k and (n_k - 1)/n_k N_k(n) for j = k, and likewise rho for
    the residual term of Eq. 2. Iterates Eq. 1/2 and Little's law by successive substitution
    from the no-contention point T = S until the relative change of every X_k is <= tol.
    Raises RuntimeError after max_iter iterations.
    """
    S = _matrix(S, kinds)
    pops = _populations(populations, S).astype(float)
    active = pops > 0
    if not active.any():
        return _result(S, np.zeros(len(S)), np.zeros_like(S), "schweitzer")
    own = np.divide(1.0, pops, out=np.zeros_like(pops), where=active)[:, None]
    Sg, A, C, D = _coefficients(S, kinds)
    T = S.copy()
    X = np.where(active, pops / np.where(active, T.sum(axis=1), 1.0), 0.0)
    G = X[:, None] * (C * T - D)  # each class's share of W, see _coefficients
    for it in range(1, max_iter + 1):
        T = Sg + A * (G.sum(axis=0) - own * G)
        X_new = np.where(active, pops / np.where(active, T.sum(axis=1), 1.0), 0.0)
        G = X_new[:, None] * (C * T - D)
        change = np.max(np.abs(X_new - X)[active] / X_new[active])
        X = X_new
        if change <= tol:
            T[~active] = 0.0
            return _result(S, X, T, "schweitzer", it)
    raise RuntimeError(f"Schweitzer MVA did not converge in {max_iter} iterations "
                       f"(last relative change {change:.3g})")


def solve(S, kinds: Sequence[str], exact_limit: int = EXACT_LIMIT) -> MvaResult:
    """MVA of K workers with population 1 each (TPDS §2.1): :func:`mva_symmetric` when all
    rows of S are equal (exact, O(K L)), :func:`mva_exact` when K <= exact_limit, else
    :func:`mva_schweitzer`. See :data:`EXACT_LIMIT` for the default switch-over."""
    S = _matrix(S, kinds)
    if np.all(S == S[0]):
        return mva_symmetric(S[0], kinds, S.shape[0])
    if S.shape[0] <= exact_limit:
        return mva_exact(S, kinds)
    return mva_schweitzer(S, kinds)
