"""Coarse-grained model of asynchronous SGD with a parameter server (TPDS §2.1).

A closed queueing network with one class per worker (population 1): the worker's own
compute station (delay, G/G/∞), then the shared uplink U, PS update S and downlink D.
Solved by mean value analysis (``mva``): the uplink and downlink as FCFS (Eq. 2) or PS (Eq. 1)
stations, the update station always PS. Workers come as classes ``[(profile, count), ...]``;
identical workers use the O(K) symmetric recursion, and a sweep over worker counts is one
compiled call.
"""
from __future__ import annotations

import numpy as np

from ..spec import SHARINGS
from .coarse_profile import CoarseProfile
from .mva import DELAY, FCFS, PS, solve, symmetric_sweep
from .results import CoarseResult
from .saturation import past_the_knee
from .two_way import TwoWay, coupled, scaled_network

NO_TWO_WAY = TwoWay()

STATIONS = ("compute", "uplink", "update", "downlink")
DEFAULT_RHO_THRESHOLD = 0.6
# Eq. 5 and Eq. 6 take up to four MVA solves per point: above 16 heterogeneous workers the
# approximate (Schweitzer) solver keeps a point well under a second (docs/mva.md has the
# timings of one exact solve, up to K = 19 in under 1 s).
EXACT_WORKERS = 16
Classes = list[tuple[CoarseProfile, int]]
ONE_PS = (1.0,)


def kinds(link: str, ps_count: int = 1) -> tuple[str, ...]:
    """Station kinds: the worker's compute (delay), then per PS its uplink, update, downlink;
    ``link`` FCFS (Eq. 2) or PS (Eq. 1) for the links, the update always PS (``mva.KINDS``)."""
    return (DELAY,) + (link, PS, link) * ps_count


KINDS_FCFS = kinds(FCFS)
KINDS_PS = kinds(PS)


def service_row(c: CoarseProfile, bandwidth_Bps: float, compute_s: float | None = None,
                fractions: tuple[float, ...] = ONE_PS) -> list[float]:
    """S_k^l for one worker: S^U = S^D = M/B (TPDS §2.1.2); ``compute_s`` overrides S_k^W.

    With several parameter servers, PS j holds the share ``fractions[j]`` of the bytes: its
    uplink, update and downlink take that share of M/B and S^S. A worker visits them in turn,
    so one worker's cycle is the 1-PS cycle (its own NIC moves all M bytes either way), while
    the load of K workers spreads over the servers. The visits are in series where real
    transfers to different servers run at once: exact for one worker, an approximation under
    contention."""
    comm = c.model_bytes / bandwidth_Bps
    row = [c.compute_s if compute_s is None else compute_s]
    for f in fractions:
        row += [comm * f, c.update_s * f, comm * f]
    return row


def async_ps(classes: Classes, bandwidth_Bps: float, sharing: str = "threshold",
             rho_threshold: float = DEFAULT_RHO_THRESHOLD, overlap: bool | None = None,
             two_way: TwoWay = NO_TWO_WAY) -> CoarseResult:
    """:func:`eq5`, with :func:`async_ps_sweep`'s saturated links for identical workers (one
    class)."""
    if len(classes) == 1:
        c, K = classes[0]
        return async_ps_sweep(c, bandwidth_Bps, [K], sharing, rho_threshold, overlap, two_way)[0]
    return eq5(classes, bandwidth_Bps, sharing, rho_threshold, overlap, two_way)


def eq5(classes: Classes, bandwidth_Bps: float, sharing: str = "threshold",
        rho_threshold: float = DEFAULT_RHO_THRESHOLD, overlap: bool | None = None,
        two_way: TwoWay = NO_TWO_WAY) -> CoarseResult:
    """Async PS throughput of the workers in ``classes``, TPDS Eqs. 1–6 as published.

    ``sharing``: a ``SHARINGS`` name, whose ``queue`` is the links' MVA discipline: FCFS
    (X^FCFS, Eq. 3) or PS (X^PS, Eq. 4); without one (threshold), Eq. 5: X^FCFS if the
    FCFS network utilization ρ^FCFS ≤ ρ_T, else X^PS. With ``overlap`` (default: the
    profiles' flag), Eq. 6: solve, replace the compute time by
    max(0, S^F − T^D) + max(0, S^B − T^U), and solve again. ``two_way`` slows the PS-shared links by
    two-way traffic (``two_way.py``).

    With Eq. 5 the result also keeps both branches (``disciplines``): transfers served one at a
    time (FCFS) is what workers that interleave see, all at once (PS) what workers in lock-step
    see, and real runs of one configuration can fall into either (docs/coarse.md).
    """
    if len(classes) == 1:
        c, K = classes[0]
        return eq5_sweep(c, bandwidth_Bps, [K], sharing, rho_threshold, overlap, two_way)[0]
    workers = [c for c, n in classes for _ in range(n)]
    overlap = all(c.overlap for c, _ in classes) if overlap is None else overlap
    batch = np.array([w.batch_size for w in workers], float)
    S = np.array([service_row(w, bandwidth_Bps) for w in workers])
    K = len(workers)

    def solve_kinds(link: str):
        return _solve_classes(S, kinds(link), batch, two_way if link == PS else NO_TWO_WAY)

    X, T, U, regime, both = _combined(solve_kinds, sharing, rho_threshold)
    if overlap:
        fwd = np.array([w.forward_s for w in workers])
        bwd = np.array([w.backward_s for w in workers])
        S[:, 0] = np.maximum(0.0, fwd - T[:, 3]) + np.maximum(0.0, bwd - T[:, 1])
        X, T, U, regime, both = _combined(solve_kinds, sharing, rho_threshold)
    return _result(K, X, T.mean(axis=0), U, regime, overlap, float(batch.sum()), both)


def async_ps_sweep(c: CoarseProfile, bandwidth_Bps: float, Ks, sharing: str = "threshold",
                   rho_threshold: float = DEFAULT_RHO_THRESHOLD,
                   overlap: bool | None = None, two_way: TwoWay = NO_TWO_WAY,
                   fractions: tuple[float, ...] = ONE_PS) -> list[CoarseResult]:
    """:func:`async_ps` for ``K`` identical workers, for every K in ``Ks`` at once;
    ``fractions``: each parameter server's share of the bytes (``service_row``). With Eq. 5
    and one PS, beyond the knee the saturated links' rate (``saturation.py``); else as
    :func:`eq5_sweep`."""
    out = eq5_sweep(c, bandwidth_Bps, Ks, sharing, rho_threshold, overlap, two_way, fractions)
    if len(fractions) > 1 or SHARINGS[sharing].queue is not None:  # one branch: as published
        return out
    one = next((r for r in out if r.workers == 1), None) or eq5_sweep(
        c, bandwidth_Bps, [1], sharing, rho_threshold, overlap, two_way)[0]
    return past_the_knee(out, one, c, c.model_bytes / bandwidth_Bps, two_way)


def eq5_sweep(c: CoarseProfile, bandwidth_Bps: float, Ks, sharing: str = "threshold",
              rho_threshold: float = DEFAULT_RHO_THRESHOLD,
              overlap: bool | None = None, two_way: TwoWay = NO_TWO_WAY,
              fractions: tuple[float, ...] = ONE_PS) -> list[CoarseResult]:
    """The model as TPDS publishes it (Eqs. 1-6) for identical workers, every K at once."""
    Ks = np.asarray(Ks, dtype=np.int64)
    overlap = c.overlap if overlap is None else overlap
    rows = np.tile(service_row(c, bandwidth_Bps, fractions=fractions), (len(Ks), 1))
    out = _sweep(rows, Ks, c.batch_size, sharing, rho_threshold, two_way)
    if overlap:  # Eq. 6 with the pull and push times summed over the servers
        T = out[1]
        pull, push = T[:, 3::3].sum(axis=1), T[:, 1::3].sum(axis=1)
        rows[:, 0] = np.maximum(0.0, c.forward_s - pull) + np.maximum(0.0, c.backward_s - push)
        out = _sweep(rows, Ks, c.batch_size, sharing, rho_threshold, two_way)
    X, T, U, regimes, both = out
    return [_result(int(K), X[i], T[i], U[i], regimes[i], overlap, float(K * c.batch_size),
                    None if both is None else both[i])
            for i, K in enumerate(Ks)]


def _sweep(rows, Ks, batch: int, sharing: str, rho_threshold: float, two_way: TwoWay = NO_TWO_WAY):
    """Eq. 3/4/5 for identical workers: examples/s, T (n, L), station utilizations, regimes,
    and with Eq. 5 both branches' examples/s, (n, 2) FCFS then PS (else None)."""
    n_ps = (rows.shape[1] - 1) // 3
    # the two-way rule follows the server with the most bytes (the first to saturate)
    j = 3 * int(np.argmax(rows[0, 1::3]))

    def solve_kinds(link: str):
        def solve(scale):
            S = scaled_network(rows, scale)
            X_steps, T = symmetric_sweep(S, kinds(link, n_ps), Ks)
            return X_steps, T, S

        X_steps, T, S = coupled(solve, Ks, two_way if link == PS else NO_TWO_WAY,
                                lambda o: (o[0] * o[1][:, 1 + j], o[0] * o[1][:, 3 + j]))
        U = X_steps[:, None] * S  # total utilization of each station (Little)
        U[:, 0] = U[:, 0] / Ks  # the compute station is each worker's own
        return X_steps * batch, T, U

    queue = SHARINGS[sharing].queue
    if queue is not None:
        X, T, U = solve_kinds(queue)
        return X, T, U, [sharing] * len(Ks), None
    X_f, T_f, U_f = solve_kinds(FCFS)
    X_p, T_p, U_p = solve_kinds(PS)
    rho = U_f[:, 1::3].max(axis=1)
    use_f = rho <= rho_threshold
    regimes = [f"{FCFS if f else PS} (rho={r:.2f} {'<=' if f else '>'} {rho_threshold:g})"
               for f, r in zip(use_f, rho)]
    pick = use_f[:, None]
    return (np.where(use_f, X_f, X_p), np.where(pick, T_f, T_p), np.where(pick, U_f, U_p), regimes,
            np.stack([X_f, X_p], axis=1))


def _solve_classes(S, kinds, batch, two_way: TwoWay = NO_TWO_WAY):
    def one(scale):
        return solve(scaled_network(S, scale[0]), kinds, exact_limit=EXACT_WORKERS)

    def queues(r):  # one job per class: Q = Σ_k T_k / cycle_k
        q = (r.T / r.T.sum(axis=1, keepdims=True)).sum(axis=0)
        return [q[1]], [q[3]]

    r = coupled(one, [len(S)], two_way, queues)
    U = r.U.sum(axis=0)
    U[0] = r.U[:, 0].mean()
    return float(np.sum(batch / r.T.sum(axis=1))), r.T, U


def _combined(solve_kinds, sharing: str, rho_threshold: float):
    """Eq. 5 (or one branch of it): (examples/s, T, utilization, regime, both branches'
    examples/s as (FCFS, PS), or None for one branch)."""
    queue = SHARINGS[sharing].queue
    if queue is not None:
        return (*solve_kinds(queue), sharing, None)
    X_f, T_f, U_f = solve_kinds(FCFS)
    X_p, T_p, U_p = solve_kinds(PS)
    rho = float(U_f[1])
    if rho <= rho_threshold:
        return X_f, T_f, U_f, f"{FCFS} (rho={rho:.2f} <= {rho_threshold:g})", (X_f, X_p)
    return X_p, T_p, U_p, f"{PS} (rho={rho:.2f} > {rho_threshold:g})", (X_f, X_p)


def _result(K: int, X: float, T_row, U_row, regime: str, overlap: bool, batch_total: float,
            both=None) -> CoarseResult:
    """Response times summed over the servers; utilizations per server (``uplink[1]``...);
    ``both``: Eq. 3's and Eq. 4's examples/s, where Eq. 5 chose between them."""
    n_ps = (len(T_row) - 1) // 3
    sfx = [f"[{j}]" if n_ps > 1 else "" for j in range(n_ps)]
    util = {"worker": float(U_row[0])}
    for j, x in enumerate(sfx):
        util |= {f"uplink{x}": float(U_row[1 + 3 * j]), f"ps{x}": float(U_row[2 + 3 * j]),
                 f"downlink{x}": float(U_row[3 + 3 * j])}
    T = {"compute": float(T_row[0])}
    T |= {s: float(np.sum(T_row[1 + i::3])) for i, s in enumerate(STATIONS[1:])}
    return CoarseResult(
        model="coarse", workers=K, throughput=float(X), step_time_s=batch_total / float(X),
        response_time_s=T, utilization=util,
        regime=regime + (" + overlap correction" if overlap else ""),
        equations="TPDS Eqs. 1-6" if overlap else "TPDS Eqs. 1-5",
        disciplines={} if both is None else {FCFS: float(both[0]), PS: float(both[1])})
