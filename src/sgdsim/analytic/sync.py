"""Coarse-grained models of synchronous SGD (TPDS §3.1): closed forms, Eqs. 7–11.

K workers, model size M, bandwidth B, forward T_F, backward T_B, update T_S. With
heterogeneous workers the step waits for the slowest compute (the straggler).
"""
from __future__ import annotations

from .coarse_profile import CoarseProfile
from .results import CoarseResult


def _phases(workers: list[CoarseProfile], bandwidth_bps: float):
    K = len(workers)
    slow = max(workers, key=lambda w: w.compute_s)
    M_over_B = max(w.model_bytes for w in workers) * 8.0 / bandwidth_bps
    update = max(w.update_s for w in workers)
    return K, M_over_B, slow.forward_s, slow.backward_s, update


def sync_ps(workers: list[CoarseProfile], bandwidth_bps: float, sharing: str = "hybrid",
            overlap: bool | None = None) -> CoarseResult:
    """Sync PS step time: Eq. 7 (PS sharing), Eq. 8 (FCFS), Eq. 9 (hybrid = their mean);
    with overlap, Eq. 10: max(T_D, T_F) + max(T_U, T_B) + T_S (the same max form is used for
    the PS and FCFS uplink terms)."""
    K, MB, TF, TB, TS = _phases(workers, bandwidth_bps)
    overlap = all(w.overlap for w in workers) if overlap is None else overlap
    TD = K * MB
    TU = {"ps": K * MB, "fcfs": MB, "hybrid": (K + 1) * MB / 2}[sharing]
    if overlap:
        T = max(TD, TF) + max(TU, TB) + TS
    else:
        T = TD + TF + TB + TU + TS
    eq = {"ps": "7", "fcfs": "8", "hybrid": "9"}[sharing]
    return _result("coarse", workers, T, {"downlink": TD, "compute": TF + TB, "uplink": TU, "update": TS},
                   bandwidth_bps, sharing, f"TPDS Eq. {'10' if overlap and sharing == 'hybrid' else eq}"
                   + (" with overlap" if overlap else ""))


def ring_allreduce(workers: list[CoarseProfile], bandwidth_bps: float,
                   overlap: bool | None = None) -> CoarseResult:
    """Ring all-reduce step time, Eq. 11: T_F + T_B + 2(K−1)M/(KB), plus the update T_S when
    the profile has one; with overlap the all-reduce hides behind the backward pass:
    T_F + max(T_B, 2(K−1)M/(KB)) + T_S."""
    K, MB, TF, TB, TS = _phases(workers, bandwidth_bps)
    overlap = all(w.overlap for w in workers) if overlap is None else overlap
    TA = 2.0 * (K - 1) / K * MB
    T = TF + (max(TB, TA) if overlap else TB + TA) + TS
    return _result("coarse", workers, T, {"compute": TF + TB, "allreduce": TA, "update": TS},
                   bandwidth_bps, "ring", "TPDS Eq. 11" + (" with overlap" if overlap else ""))


def _result(model, workers, step_s, phases, bandwidth_bps, regime, eq) -> CoarseResult:
    batch = sum(w.batch_size for w in workers)
    util = {"worker": (phases["compute"]) / step_s}
    for k in ("downlink", "uplink", "allreduce"):
        if k in phases:  # busy time of the PS NIC (or each worker's NIC for all-reduce)
            busy = len(workers) * max(w.model_bytes for w in workers) * 8.0 / bandwidth_bps
            util[k] = min(1.0, (busy if k != "allreduce" else phases[k]) / step_s)
    return CoarseResult(model=model, workers=len(workers), throughput=batch / step_s,
                        step_time_s=step_s, response_time_s=dict(phases), utilization=util,
                        regime=regime, equations=eq)
