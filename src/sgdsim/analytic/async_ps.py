"""Coarse-grained model of asynchronous SGD with a parameter server (TPDS §2.1).

A closed queueing network with one class per worker (population 1): the worker's own
compute station (delay, G/G/∞), then the shared uplink U, PS update S and downlink D.
Solved by mean value analysis (``mva``): the uplink and downlink as FCFS (Eq. 2) or PS (Eq. 1)
stations, the update station always PS.
"""
from __future__ import annotations

import numpy as np

from .coarse_profile import CoarseProfile
from .mva import solve
from .results import CoarseResult

STATIONS = ("compute", "uplink", "update", "downlink")
KINDS_FCFS = ("delay", "fcfs", "ps", "fcfs")
KINDS_PS = ("delay", "ps", "ps", "ps")
DEFAULT_RHO_THRESHOLD = 0.6


def service_times(workers: list[CoarseProfile], bandwidth_bps: float,
                  compute_s: np.ndarray | None = None) -> np.ndarray:
    """S_k^l: (K, 4) with S^U = S^D = M/B (TPDS §2.1.2); ``compute_s`` overrides S_k^W."""
    comm = np.array([w.model_bytes * 8.0 / bandwidth_bps for w in workers])
    comp = np.array([w.compute_s for w in workers]) if compute_s is None else compute_s
    upd = np.array([w.update_s for w in workers])
    return np.stack([comp, comm, upd, comm], axis=1)


def _solve(S: np.ndarray, kinds, batch: np.ndarray):
    """Throughput (examples/s) as in Eqs. 3/4, response times and the MVA result."""
    r = solve(S, kinds)
    cycle = r.T.sum(axis=1)  # T_k^k + T_k^U + T_k^S + T_k^D
    return float(np.sum(batch / cycle)), r


def async_ps(workers: list[CoarseProfile], bandwidth_bps: float, sharing: str = "threshold",
             rho_threshold: float = DEFAULT_RHO_THRESHOLD, overlap: bool | None = None) -> CoarseResult:
    """Async PS throughput, TPDS Eqs. 1–6.

    ``sharing``: "fcfs" (X^FCFS, Eq. 3), "ps" (X^PS, Eq. 4) or "threshold" (Eq. 5: X^FCFS if the
    FCFS network utilization ρ^FCFS ≤ ρ_T, else X^PS). With ``overlap`` (default: the
    profiles' flag), Eq. 6: solve, replace the compute time by
    max(0, S^F − T^D) + max(0, S^B − T^U), and solve again.
    """
    batch = np.array([w.batch_size for w in workers], float)
    overlap = all(w.overlap for w in workers) if overlap is None else overlap
    S = service_times(workers, bandwidth_bps)
    res = _combined(S, batch, sharing, rho_threshold)
    if overlap:
        _, r, _ = res
        fwd = np.array([w.forward_s for w in workers])
        bwd = np.array([w.backward_s for w in workers])
        corrected = np.maximum(0.0, fwd - r.T[:, 3]) + np.maximum(0.0, bwd - r.T[:, 1])
        res = _combined(service_times(workers, bandwidth_bps, corrected), batch, sharing, rho_threshold)
    X, r, regime = res
    K = len(workers)
    return CoarseResult(
        model="coarse", workers=K, throughput=X, step_time_s=float(batch.sum() / X),
        response_time_s={s: float(r.T[:, i].mean()) for i, s in enumerate(STATIONS)},
        utilization=_utilization(r, K),
        regime=regime + (" + overlap correction" if overlap else ""),
        equations="TPDS Eqs. 1-6" if overlap else "TPDS Eqs. 1-5")


def _combined(S, batch, sharing: str, rho_threshold: float):
    """Eq. 5 (or one branch of it): returns (X, MVA result, regime name)."""
    if sharing == "ps":
        X, r = _solve(S, KINDS_PS, batch)
        return X, r, "ps"
    X_f, r_f = _solve(S, KINDS_FCFS, batch)
    if sharing == "fcfs":
        return X_f, r_f, "fcfs"
    rho = float(r_f.U[:, 1].sum())  # network utilization of the FCFS solution (uplink = downlink)
    if rho <= rho_threshold:
        return X_f, r_f, f"fcfs (rho={rho:.2f} <= {rho_threshold:g})"
    X_p, r_p = _solve(S, KINDS_PS, batch)
    return X_p, r_p, f"ps (rho={rho:.2f} > {rho_threshold:g})"


def _utilization(r, K: int) -> dict[str, float]:
    out = {"worker": float(r.U[:, 0].mean())}  # each worker's own compute station
    for i, name in ((1, "uplink"), (2, "ps"), (3, "downlink")):
        out[name] = float(r.U[:, i].sum())
    return out
