"""Dispatch to the analytical models, and the options each one can honour."""
from __future__ import annotations

from ..errors import ConfigError
from ..spec import ARCHITECTURES, SHARINGS, Cluster, Control, Strategy
from ..spec.registries import DEFAULT_ORDER, DEFAULT_STREAMS
from .async_ps import async_ps_sweep
from .baselines import cynthia, lin, lin_sweep
from .coarse_profile import CoarseProfile
from .results import CoarseResult
from .two_way import rule_for

ANALYTIC = ("coarse", "lin", "cynthia")
MODELS = ("fine",) + ANALYTIC


def eq5_sharing() -> str:
    """The async coarse model's default sharing: the policy only it has (Eq. 5's threshold)."""
    return next(n for n, s in SHARINGS.items() if not s.simulated)


def unsupported(model: str, strategy: Strategy, cluster: Cluster, control: Control,
                ps_count: int, heterogeneous: bool = False) -> str | None:
    """Why ``model`` cannot honour these options (None if it can)."""
    sharing = strategy.sharing
    policy = None if sharing is None else SHARINGS[sharing]
    if model == "fine":
        return f"sharing {sharing!r} is Eq. 5 of the coarse model" if policy and not policy.simulated else None
    several = ps_count > 1
    servers = " or ".join(f"--arch {n}" for n, a in ARCHITECTURES.items() if a.servers)
    mode = strategy.mode
    checks = [
        (strategy.streams != DEFAULT_STREAMS, f"--streams {strategy.streams}"),
        (strategy.order != DEFAULT_ORDER, f"--order {strategy.order}"),
        (cluster.link.flow_cap_Bps is not None, "--flow-cap"),
        (several and (model != "coarse" or heterogeneous), "several parameter servers"),
        (control.timeline, "--timeline"),
        (model == "lin" and (mode != "async" or not strategy.architecture.servers),
         f"anything but --mode async {servers}"),
        (model == "cynthia" and not strategy.architecture.servers, f"--arch {strategy.arch}"),
        (model == "cynthia" and sharing is not None, f"--sharing {sharing}"),
        (mode == "async" and policy is not None and bool(policy.runs),
         f"--sharing {sharing} in async mode (use {eq5_sharing()})"),
        (mode == "sync" and policy is not None and not policy.simulated,
         f"--sharing {sharing} in sync mode (use {strategy.architecture.default_sharing(mode)})"),
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
    B, sharing, rho = cluster.link.bandwidth_Bps, strategy.sharing, strategy.rho_threshold
    if strategy.mode == "async" and model == "coarse":
        two_way = rule_for(cluster.contention.two_way, strategy.ps_count)
        return async_ps_sweep(c, B, Ks, sharing or eq5_sharing(), rho, two_way=two_way, fractions=fractions)
    if strategy.mode == "async" and model == "lin":
        return lin_sweep(c, B, Ks, sharing or eq5_sharing(), rho)
    return [_one(model, [(c, K)], strategy, cluster, fractions) for K in Ks]


def _one(model, classes, strategy: Strategy, cluster: Cluster, fractions) -> CoarseResult:
    B, sharing = cluster.link.bandwidth_Bps, strategy.sharing
    if model == "cynthia":
        return cynthia(classes, B)
    if model == "lin":
        return lin(classes, B, sharing or eq5_sharing(), strategy.rho_threshold)
    return strategy.architecture.coarse(classes, strategy, cluster, fractions)
