"""Dispatch to the analytical models, and the options each one can honour."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .async_ps import async_ps_sweep
from .baselines import cynthia, lin, lin_sweep
from .coarse_profile import CoarseProfile
from .results import CoarseResult

if TYPE_CHECKING:  # the evaluation layer's inputs; analytic stays importable without it
    from ..evaluate.inputs import Cluster, Control, Strategy

ANALYTIC = ("coarse", "lin", "cynthia")
MODELS = ("fine",) + ANALYTIC


def unsupported(model: str, strategy: Strategy, cluster: Cluster, control: Control,
                ps_count: int, heterogeneous: bool = False) -> str | None:
    """Why ``model`` cannot honour these options (None if it can)."""
    sharing = strategy.sharing
    if model == "fine":
        return "sharing 'threshold' is Eq. 5 of the coarse model" if sharing == "threshold" else None
    several = ps_count > 1
    checks = [
        (strategy.streams != "fifo", "--streams http2"),
        (strategy.order != "profiled", f"--order {strategy.order}"),
        (cluster.flow_cap_bps is not None, "--flow-cap"),
        (several and (model != "coarse" or heterogeneous), "several parameter servers"),
        (control.timeline, "--timeline"),
        (model == "lin" and (strategy.mode, strategy.arch) != ("async", "ps"), "anything but --mode async --arch ps"),
        (model == "cynthia" and strategy.arch != "ps", "--arch allreduce"),
        (model == "cynthia" and sharing is not None, f"--sharing {sharing}"),
        (strategy.mode == "async" and sharing == "hybrid", "--sharing hybrid in async mode (use threshold)"),
        (strategy.mode == "sync" and sharing == "threshold", "--sharing threshold in sync mode (use hybrid)"),
        (strategy.arch == "allreduce" and sharing is not None, f"--sharing {sharing} with all-reduce"),
    ]
    for bad, what in checks:
        if bad:
            return f"the {model} model cannot honour {what}"
    return None


def run_analytic(model: str, classes: list[tuple[CoarseProfile, int]], Ks: list[int] | None,
                 strategy: Strategy, cluster: Cluster,
                 fractions: tuple[float, ...] = (1.0,)) -> list[CoarseResult]:
    """Analytical predictions: one class ``[(profile, 1)]`` swept over worker counts ``Ks``,
    or fixed heterogeneous ``classes`` (``Ks`` None) for a single point. ``fractions``: each
    parameter server's share of the bytes (the coarse model only)."""
    if model not in ANALYTIC:
        raise ConfigError(f"unknown model {model!r} (choose from {', '.join(MODELS)})")
    if Ks is None:
        return [_one(model, classes, strategy, cluster, fractions)]
    c = classes[0][0]
    B, sharing, rho = cluster.bandwidth_bps, strategy.sharing, strategy.rho_threshold
    if strategy.mode == "async" and model == "coarse":
        return async_ps_sweep(c, B, Ks, sharing or "threshold", rho, two_way=cluster.two_way(strategy.ps_count),
                              fractions=fractions)
    if strategy.mode == "async" and model == "lin":
        return lin_sweep(c, B, Ks, sharing or "threshold", rho)
    return [_one(model, [(c, K)], strategy, cluster, fractions) for K in Ks]


def _one(model, classes, strategy: Strategy, cluster: Cluster, fractions) -> CoarseResult:
    B, sharing = cluster.bandwidth_bps, strategy.sharing
    if model == "cynthia":
        return cynthia(classes, B)
    if model == "lin":
        return lin(classes, B, sharing or "threshold", strategy.rho_threshold)
    from ..arch import ARCHITECTURES  # the architectures build on this package's closed forms

    return ARCHITECTURES[strategy.arch].coarse(classes, strategy, cluster, fractions)
