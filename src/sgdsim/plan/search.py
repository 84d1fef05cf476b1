"""``sgdsim plan``: which configuration to rent, found by pruning with the coarse models and
checking the finalists with the simulator.

1. Coarse pass: every candidate strategy × bandwidth × worker count through the analytical
   models (milliseconds per strategy and bandwidth; async PS by one MVA sweep).
2. Objective (``objective.py``) on the coarse numbers picks the finalists.
3. Fine pass: the simulator with replications gives each finalist a 95 % interval; the
   objective is applied again, and finalists whose intervals overlap the winner's are a tie.
4. Knee per strategy from its coarse curve.

Only domain errors (``SgdsimError``: a configuration a model cannot honour) are counted as
infeasible; anything else is a bug and propagates.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..errors import ConfigError, SgdsimError
from ..evaluate import FineTask, Serial, evaluate, run_fine, sim_config
from ..evaluate.executors import Executor
from ..point import PredictionPoint
from ..progress import Progress
from ..spec import ARCHITECTURES, MODES, NO_MARGIN, Cluster, Control, Job, Strategy
from .objective import Objective, PlanPoint, Prices, knee_of


def strategy_names() -> dict[str, tuple[str, str]]:
    """The planner's search space, from the architecture registry: each architecture in each
    mode it runs, by label (async-ps, sync-ps, allreduce)."""
    return {a.label(m, None): (name, m) for name, a in ARCHITECTURES.items() for m in a.modes}


@dataclass(frozen=True)
class PlanRequest:
    job: Job
    strategies: tuple[Strategy, ...]
    clusters: tuple[Cluster, ...]  # one per bandwidth
    workers: tuple[int, ...]
    dataset_size: int
    objective: Objective
    knee_rel: float = 0.05
    finalists: int = 5
    control: Control = Control()
    prices: Prices = Prices()
    collective_cluster: tuple[Cluster, ...] = ()  # the clusters as collectives see them (a file's step latency)

    def cluster_for(self, strategy: Strategy, cluster: Cluster) -> Cluster:
        """``cluster`` for ``strategy``: the collectives' own measurements where it has them."""
        if "ring_latency" not in strategy.architecture.options or not self.collective_cluster:
            return cluster
        return self.collective_cluster[self.clusters.index(cluster)]


@dataclass
class PlanResult:
    request: PlanRequest
    points: list[PlanPoint]  # the coarse pass, every feasible point
    checked: list[PlanPoint]  # the finalists after the fine pass
    recommended: PlanPoint | None
    ties: list[PlanPoint]
    best_achievable: PlanPoint | None
    frontier: list[PlanPoint]
    knees: dict[str, dict]
    infeasible: list[str] = field(default_factory=list)


MAX_PS = 16  # each server count is one more coarse sweep (and more finalists)


def candidates(names: Sequence[str] | None = None, max_ps: int = 1, collective: str | None = None,
               bucket_size_bytes: float | None = None, overlap: bool = True) -> tuple[Strategy, ...]:
    """Strategies from labels (``strategy_names``); with servers, async with 1..``max_ps``
    of them; collectives with ``collective`` and DDP buckets of ``bucket_size_bytes``; each
    with ``overlap`` (False: transfers wait for the step's compute, ``--no-overlap``)."""
    known = strategy_names()
    names = list(known) if names is None else names
    if not names:
        raise ConfigError("no candidate strategies given")
    if not 1 <= max_ps <= MAX_PS:
        raise ConfigError(f"--max-ps must be from 1 to {MAX_PS}, got {max_ps}")
    out: list[Strategy] = []
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown strategy {name!r} (choose from {', '.join(known)})")
        arch, mode = known[name]
        out += _variants(arch, mode, max_ps, collective, bucket_size_bytes, overlap)
    return tuple(dict.fromkeys(out))


def _variants(arch: str, mode: str, max_ps: int, collective: str | None,
              bucket_size_bytes: float | None, overlap: bool) -> list[Strategy]:
    options = ARCHITECTURES[arch].options
    kw: dict = {"arch": arch, "mode": mode, "overlap": overlap}
    if "collective" in options:
        kw.update(bucket_size_bytes=bucket_size_bytes, **({"collective": collective} if collective else {}))
    if "ps_count" not in options:
        return [Strategy(**kw)]
    servers = range(1, max_ps + 1) if mode == MODES[0] else [1]  # async: each count one more sweep
    return [Strategy(**kw, ps_count=n) for n in servers]


def plan(req: PlanRequest, executor: Executor | None = None,
         log: Callable[[str], None] = lambda msg: None) -> PlanResult:
    if req.dataset_size < 1:
        raise ConfigError(f"--dataset-size must be at least 1 example, got {req.dataset_size}")
    points, infeasible = coarse_pass(req)
    if not points:
        raise ConfigError("no candidate configuration is feasible: " + "; ".join(infeasible))
    obj = req.objective
    finalists = obj.finalists(points, req.finalists)
    log(f"coarse pass: {len(points)} configurations; checking {len(finalists)} with the simulator")
    checked = fine_pass(req, finalists, executor)
    winner, ties = obj.choose(checked)
    best = None if winner else obj.best_achievable(checked or points)
    return PlanResult(req, points, checked, winner, ties, best, obj.frontier(points),
                      knees(req, points), infeasible)


def coarse_pass(req: PlanRequest) -> tuple[list[PlanPoint], list[str]]:
    points: list[PlanPoint] = []
    infeasible: list[str] = []
    for strategy in req.strategies:
        for cluster in (req.cluster_for(strategy, c) for c in req.clusters):
            try:
                preds = evaluate(req.job, strategy, cluster, list(req.workers), "coarse")
            except SgdsimError as e:  # a configuration the model cannot honour
                infeasible.append(f"{strategy.label}: {e}")
                continue
            points += [PlanPoint.of(p, strategy, cluster, req.dataset_size, req.prices) for p in preds]
    return points, infeasible


def fine_pass(req: PlanRequest, finalists: list[PlanPoint],
              executor: Executor | None) -> list[PlanPoint]:
    """Each finalist simulated (its own strategy and cluster), with its interval."""
    tasks = [FineTask(req.job, p.strategy, p.cluster, _compared(req.control), p.workers) for p in finalists]
    preds = _run(tasks, executor, f"checking {len(tasks)} finalists with the simulator")
    return [PlanPoint.of(f, p.strategy, p.cluster, req.dataset_size, req.prices)
            for f, p in zip(preds, finalists)]


def fine_curves(req: PlanRequest, executor: Executor | None, workers: Sequence[int],
                bandwidth_Bps: float) -> dict[Strategy, list[PredictionPoint]]:
    """For the plot: each strategy's fine curve at one bandwidth, with intervals."""
    cluster = next(c for c in req.clusters if c.link.bandwidth_Bps == bandwidth_Bps)
    tasks = [FineTask(req.job, s, req.cluster_for(s, cluster), _compared(req.control), w)
             for s in req.strategies for w in workers]
    preds = iter(_run(tasks, executor, "simulating the curves for the plot"))
    return {s: [next(preds) for _ in workers] for s in req.strategies}


def _compared(control: Control) -> Control:
    """Finalists are compared on the simulator's intervals: the model's own error
    (``evaluate/margin.py``) is one job's, calibration's and model's bias, shared by every
    candidate, and would tie configurations the simulator tells apart. The real runs' spread
    stays (it is the job's, as before)."""
    return replace(control, margin=replace(NO_MARGIN, run_spread_rel=control.margin.run_spread_rel))


def plot_bandwidth(result: PlanResult) -> float:
    """The bandwidth a plot shows in detail: the recommendation's, else the first."""
    rec = result.recommended or result.best_achievable
    return rec.cluster.link.bandwidth_Bps if rec else result.request.clusters[0].link.bandwidth_Bps


def knee_key(req: PlanRequest, strategy: Strategy, bandwidth_Bps: float) -> str:
    return strategy.label + (f"@{_bw_text(bandwidth_Bps)}" if len(req.clusters) > 1 else "")


def _run(tasks: list[FineTask], executor: Executor | None, label: str) -> list[PredictionPoint]:
    for t in tasks:  # a bad combination fails before any work
        sim_config(t.strategy, t.cluster, t.control)
    progress = Progress(len(tasks), label)
    try:
        return (executor or Serial()).map(run_fine, tasks, progress)
    finally:
        progress.close()


def knees(req: PlanRequest, points: list[PlanPoint]) -> dict[str, dict]:
    """Per strategy (and bandwidth when there are several): the knee of the coarse curve."""
    out: dict[str, dict] = {}
    for strategy in req.strategies:
        for cluster in req.clusters:
            curve = sorted((p for p in points if p.strategy == strategy
                            and p.cluster == req.cluster_for(strategy, cluster)),
                           key=lambda p: p.workers)
            if not curve:
                continue
            out[knee_key(req, strategy, cluster.link.bandwidth_Bps)] = knee_of(curve, req.knee_rel)
    return out


def _bw_text(Bps: float) -> str:
    from ..units import format_bandwidth

    return format_bandwidth(Bps).replace(" ", "")


def workers_for_plot(workers: Sequence[int]) -> list[int]:
    """Powers of two up to the largest count, and the largest count itself."""
    top = max(workers)
    ws = [w for w in workers if w & (w - 1) == 0] + [top]
    return sorted(set(ws)) if len(workers) > 8 else sorted(set(workers))
