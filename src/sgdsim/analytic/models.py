"""Dispatch to the analytical models, and the options each one can honour."""
from __future__ import annotations

from ..errors import ConfigError
from ..sim.config import SimConfig
from .async_ps import DEFAULT_RHO_THRESHOLD, async_ps, async_ps_sweep
from .baselines import cynthia, lin, lin_sweep
from .coarse_profile import CoarseProfile
from .results import CoarseResult
from .sync import ring_allreduce, sync_ps

ANALYTIC = ("coarse", "lin", "cynthia")
MODELS = ("fine",) + ANALYTIC


def unsupported(model: str, config: SimConfig, sharing: str | None, ps_count: int) -> str | None:
    """Why ``model`` cannot honour these options (None if it can)."""
    if model == "fine":
        return "sharing 'threshold' is Eq. 5 of the coarse model" if sharing == "threshold" else None
    checks = [
        (config.streams != "fifo", "--streams http2"), (config.order != "profiled", f"--order {config.order}"),
        (config.flow_cap_bps is not None, "--flow-cap"), (ps_count > 1, "several parameter servers"),
        (config.timeline, "--timeline"),
        (model == "lin" and (config.mode, config.arch) != ("async", "ps"), "anything but --mode async --arch ps"),
        (model == "cynthia" and config.arch != "ps", "--arch allreduce"),
        (model == "cynthia" and sharing is not None, f"--sharing {sharing}"),
        (config.mode == "async" and sharing == "hybrid", "--sharing hybrid in async mode (use threshold)"),
        (config.mode == "sync" and sharing == "threshold", "--sharing threshold in sync mode (use hybrid)"),
        (config.arch == "allreduce" and sharing is not None, f"--sharing {sharing} with all-reduce"),
    ]
    for bad, what in checks:
        if bad:
            return f"the {model} model cannot honour {what}"
    return None


def run_analytic(model: str, classes: list[tuple[CoarseProfile, int]], Ks: list[int] | None,
                 config: SimConfig, sharing: str | None,
                 rho_threshold: float = DEFAULT_RHO_THRESHOLD) -> list[CoarseResult]:
    """Analytical predictions: one class ``[(profile, 1)]`` swept over worker counts ``Ks``,
    or fixed heterogeneous ``classes`` (``Ks`` None) for a single point."""
    B = config.bandwidth_bps
    if model not in ANALYTIC:
        raise ConfigError(f"unknown model {model!r} (choose from {', '.join(MODELS)})")
    if Ks is None:
        return [_one(model, classes, config, sharing, rho_threshold)]
    c = classes[0][0]
    if config.mode == "async" and model == "coarse":
        return async_ps_sweep(c, B, Ks, sharing or "threshold", rho_threshold,
                              two_way=config.two_way)
    if config.mode == "async" and model == "lin":
        return lin_sweep(c, B, Ks, sharing or "threshold", rho_threshold)
    return [_one(model, [(c, K)], config, sharing, rho_threshold) for K in Ks]


def _one(model, classes, config: SimConfig, sharing, rho_threshold) -> CoarseResult:
    B = config.bandwidth_bps
    if model == "cynthia":
        return cynthia(classes, B)
    if model == "lin":
        return lin(classes, B, sharing or "threshold", rho_threshold)
    if config.arch == "allreduce":
        return ring_allreduce(classes, B, step_latency_s=config.ring_latency_s)
    if config.mode == "sync":
        return sync_ps(classes, B, sharing or "hybrid", fcfs_weight=config.fcfs_weight)
    return async_ps(classes, B, sharing or "threshold", rho_threshold, two_way=config.two_way)
