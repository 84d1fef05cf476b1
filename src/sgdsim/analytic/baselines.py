"""Baselines the papers compare against, so users can see why the fine model matters."""
from __future__ import annotations

from dataclasses import replace

from .async_ps import Classes, eq5, eq5_sweep
from .coarse_profile import CoarseProfile
from .results import CoarseResult

# a baseline as published: its one number (Eq. 5's branch), without the span of the branches
LIN = "Lin et al. MASCOTS'18 (TPDS Eqs. 1-5, sequential phases)"


def lin_sweep(c: CoarseProfile, bandwidth_Bps: float, Ks, sharing: str = "threshold",
              rho_threshold: float = 0.6) -> list[CoarseResult]:
    """Lin et al. (MASCOTS'18): the async queueing model with the phases taken sequentially,
    i.e. TPDS Eqs. 1–5 without the overlap correction (Eq. 6), for K identical workers."""
    return [replace(r, model="lin", equations=LIN, disciplines={})
            for r in eq5_sweep(c, bandwidth_Bps, Ks, sharing, rho_threshold, overlap=False)]


def lin(classes: Classes, bandwidth_Bps: float, sharing: str = "threshold",
        rho_threshold: float = 0.6) -> CoarseResult:
    """:func:`lin_sweep` for one point, also with heterogeneous workers."""
    r = eq5(classes, bandwidth_Bps, sharing, rho_threshold, overlap=False)
    return replace(r, model="lin", equations=LIN, disciplines={})


def cynthia(classes: Classes, bandwidth_Bps: float) -> CoarseResult:
    """Cynthia (ICPP'19, as in ICPE §1): W·K / (T_p · max(1, W·U_1) + 2·T_C), with T_p the
    batch processing time, T_C = M/B the transfer time and U_1 = 2·T_C / (T_p + 2·T_C) the
    network utilization of one worker (one network resource carries both directions)."""
    W = sum(n for _, n in classes)
    K = sum(c.batch_size * n for c, n in classes) / W
    Tp = sum((c.compute_s + c.update_s) * n for c, n in classes) / W
    Tc = max(c.model_bytes for c, _ in classes) / bandwidth_Bps
    U1 = 2 * Tc / (Tp + 2 * Tc)
    X = W * K / (Tp * max(1.0, W * U1) + 2 * Tc)
    return CoarseResult(model="cynthia", workers=W, throughput=X, step_time_s=W * K / X,
                        response_time_s={"compute": Tp, "transfer": 2 * Tc},
                        utilization={"network": min(1.0, W * U1), "worker": Tp / (W * K / X)},
                        regime="saturated" if W * U1 > 1 else "unsaturated",
                        equations="Cynthia ICPP'19 (ICPE §1)")
