"""Baselines the papers compare against, so users can see why the fine model matters."""
from __future__ import annotations

from .async_ps import async_ps
from .coarse_profile import CoarseProfile
from .results import CoarseResult


def lin(workers: list[CoarseProfile], bandwidth_bps: float, sharing: str = "threshold",
        rho_threshold: float = 0.6) -> CoarseResult:
    """Lin et al. (MASCOTS'18): the async queueing model with the phases taken sequentially,
    i.e. TPDS Eqs. 1–5 without the overlap correction (Eq. 6)."""
    r = async_ps(workers, bandwidth_bps, sharing, rho_threshold, overlap=False)
    return CoarseResult(model="lin", workers=r.workers, throughput=r.throughput,
                        step_time_s=r.step_time_s, response_time_s=r.response_time_s,
                        utilization=r.utilization, regime=r.regime,
                        equations="Lin et al. MASCOTS'18 (TPDS Eqs. 1-5, sequential phases)")


def cynthia(workers: list[CoarseProfile], bandwidth_bps: float) -> CoarseResult:
    """Cynthia (ICPP'19, as in ICPE §1): W·K / (T_p · max(1, W·U_1) + 2·T_C), with T_p the
    batch processing time, T_C = M/B the transfer time and U_1 = 2·T_C / (T_p + 2·T_C) the
    network utilization of one worker (one network resource carries both directions)."""
    W = len(workers)
    K = sum(w.batch_size for w in workers) / W
    Tp = sum(w.compute_s + w.update_s for w in workers) / W
    Tc = max(w.model_bytes for w in workers) * 8.0 / bandwidth_bps
    U1 = 2 * Tc / (Tp + 2 * Tc)
    X = W * K / (Tp * max(1.0, W * U1) + 2 * Tc)
    return CoarseResult(model="cynthia", workers=W, throughput=X, step_time_s=W * K / X,
                        response_time_s={"compute": Tp, "transfer": 2 * Tc},
                        utilization={"network": min(1.0, W * U1), "worker": Tp / (W * K / X)},
                        regime="saturated" if W * U1 > 1 else "unsaturated",
                        equations="Cynthia ICPP'19 (ICPE §1)")
