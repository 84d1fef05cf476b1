"""The evaluation layer: typed inputs in, ``PredictionPoint``s out; no parsing, no printing.

``evaluate`` is what ``sgdsim.predict``, the CLI, ``validate`` and ``plan`` call. The
simulator's points go through an executor (``executors.py``); the analytical models answer in
milliseconds in this process. Hybrid sharing (a ps and an fcfs run mixed, TPDS Eq. 9) and
replications live in ``replicate.py``; what the interval for one real run holds beyond the
simulated runs (the real runs' spread, the model's error) in ``margin.py``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..analytic.models import MODELS, run_analytic, unsupported
from ..analytic.coarse_profile import CoarseProfile
from ..analytic.results import CoarseResult
from ..errors import ConfigError
from ..placement import ps_fractions
from ..point import PredictionPoint
from ..profile.transforms import with_overhead
from ..progress import Progress, status
from ..replicate import simulate_point
from ..sim import SimConfig
from ..spec import MODES, NO_MARGIN, Cluster, Control, Job, Margin, Strategy
from ..spec.limits import MAX_POINTS, MAX_SIM_WORKER_SUM, MAX_SIM_WORKERS, MAX_WORKERS
from ..topology import Topology
from ..topology.local import with_local_aggregation
from .executors import Executor, Serial
from .jobs import AnyProfile, as_strategy_runs, coarse_profile, default_ps_count, fine_profile, worker_classes
from .margin import coarse_for_one_run, for_one_run, with_estimated_profile


@dataclass(frozen=True)
class FineTask:
    """One simulated point, picklable for a process pool or a Dask worker."""

    job: Job
    strategy: Strategy
    cluster: Cluster
    control: Control
    workers: int


def sim_config(strategy: Strategy, cluster: Cluster, control: Control) -> SimConfig:
    """The simulator's configuration (it checks the combination of the three)."""
    return SimConfig(strategy, cluster, control)


def run_fine(task: FineTask) -> PredictionPoint:
    config = sim_config(task.strategy, task.cluster, task.control)
    job = as_strategy_runs(task.job, task.strategy.overlap)  # a plan's tasks come here directly
    pt = simulate_point(worker_classes(job, task.workers), config, task.control.replications)
    return for_one_run(pt, task.control.margin)


def models_for(model: str, job: Job, strategy: Strategy, cluster: Cluster, control: Control,
               on_skip: Callable[[str], None] | None = None) -> list[str]:
    """The models to run: ``model``, or with "all" every one that can honour the options
    (``on_skip(reason)`` hears about the others). A model that cannot is a ConfigError."""
    n_ps = strategy.ps_count or default_ps_count(job)
    why = [(name, unsupported(name, strategy, cluster, control, n_ps, job.heterogeneous))
           for name in (MODELS if model == "all" else [model])]
    if model != "all":
        if model not in MODELS:
            raise ConfigError(f"unknown model {model!r} (choose from {', '.join(MODELS)}, all)")
        if why[0][1]:
            raise ConfigError(why[0][1])
    for _, reason in why:
        if reason and on_skip:
            on_skip(reason)
    return [name for name, reason in why if not reason]


def evaluate(job: Job, strategy: Strategy, cluster: Cluster, workers: Sequence[int],
             model: str = "fine", control: Control = Control(),
             executor: Executor | None = None, on_skip: Callable[[str], None] | None = None,
             progress_label: str = "simulating") -> list[PredictionPoint]:
    """Predictions of ``model`` ("fine", "coarse", "lin", "cynthia" or "all") for each
    worker count (one point for a heterogeneous job), sorted by workers then model."""
    control = with_estimated_profile(control, job)  # an estimated profile's error is in its intervals
    job = as_strategy_runs(job, strategy.overlap)
    config = sim_config(strategy, cluster, control)  # one validation of the combination, for every model
    counts = [sum(c.count for c in job.classes)] if job.heterogeneous else sorted(set(workers))
    if not counts or min(counts) < 1:
        raise ConfigError(f"worker counts must be at least 1, got {list(workers)}")
    if max(counts) > MAX_WORKERS:
        raise ConfigError(f"at most {MAX_WORKERS:,} workers, got {max(counts):,}")
    if len(counts) > MAX_POINTS:
        raise ConfigError(f"at most {MAX_POINTS:,} worker counts in one call, got {len(counts):,} "
                          "(give a list such as 1,2,4,8,...)")
    topology = config.topology()
    layouts = {W: topology.layout(W) for W in counts}  # whole nodes, checked before any work
    if strategy.architecture.per_node_workers and topology.gpus_per_node > 1:
        return _per_node(job, strategy, cluster, topology, layouts, model, control, executor,
                         on_skip, progress_label)
    points: list[PredictionPoint] = []
    for name in models_for(model, job, strategy, cluster, control, on_skip):
        if name == "fine":
            points += evaluate_fine(job, strategy, cluster, control, counts, executor, progress_label)
        else:  # a spinner: the coarse two-way fixed point over a long sweep can take minutes
            with status(f"{name} model ({len(counts)} worker count{'s' if len(counts) > 1 else ''})"):
                # the coarse model's error is measured; the baselines' are not (they get none)
                points += evaluate_analytic(name, job, strategy, cluster, None if job.heterogeneous else counts,
                                            control.margin if name == "coarse" else NO_MARGIN)
    order = {m: i for i, m in enumerate(MODELS)}
    return sorted(points, key=lambda p: (p.workers, order[p.model]))


def _per_node(job: Job, strategy: Strategy, cluster: Cluster, topology: Topology,
              layouts: dict[int, tuple[int, int]], model: str, control: Control, executor,
              on_skip, progress_label: str) -> list[PredictionPoint]:
    """Parameter servers with multi-device nodes (TPDS §4.4): each node aggregates locally and
    is one worker of the servers (``topology/local.py``); points report devices. ``layouts``:
    (nodes, devices per node) of each device count."""
    if job.heterogeneous:
        raise ConfigError("--gpus-per-node with --arch ps needs one profile, not --worker-profile")
    single = replace(cluster, nodes=replace(cluster.nodes, gpus_per_node=1, intra_bandwidth_Bps=None))
    points: list[PredictionPoint] = []
    for devices in sorted({d for _, d in layouts.values()}):
        topo = replace(topology, gpus_per_node=devices)
        node_job = Job.of(with_local_aggregation(fine_profile(job.profile), topo))
        nodes = [n for n, d in layouts.values() if d == devices]
        for pt in evaluate(node_job, strategy, single, nodes, model, control, executor, on_skip,
                           progress_label):
            points.append(replace(pt, workers=pt.workers * devices))
    order = {m: i for i, m in enumerate(MODELS)}
    return sorted(points, key=lambda p: (p.workers, order[p.model]))


def evaluate_fine(job: Job, strategy: Strategy, cluster: Cluster, control: Control,
                  counts: Sequence[int], executor: Executor | None = None,
                  progress_label: str = "simulating") -> list[PredictionPoint]:
    sim_config(strategy, cluster, control)  # a bad combination fails before any work
    if max(counts) > MAX_SIM_WORKERS:
        raise ConfigError(f"the simulator handles up to {MAX_SIM_WORKERS} workers, got "
                          f"{max(counts):,} (the analytical models go further: --model coarse)")
    if sum(counts) > MAX_SIM_WORKER_SUM:
        raise ConfigError(f"this sweep simulates {sum(counts):,} workers in all (limit "
                          f"{MAX_SIM_WORKER_SUM:,}): give a list such as 1,2,4,...,{max(counts)} "
                          "or use --model coarse")
    runs = sum(counts) * (control.replications or 8)  # auto: at most 2 rounds of 4
    if runs > 8 * MAX_SIM_WORKER_SUM:
        raise ConfigError(f"{control.replications} replications of this sweep simulate {runs:,} "
                          f"workers in all (limit {8 * MAX_SIM_WORKER_SUM:,}): lower "
                          "--replications or the worker counts")
    # largest first: a pool's last task is then a small one, not the W = max point alone on
    # one core while the others idle
    order = sorted(range(len(counts)), key=lambda i: -counts[i])
    tasks = [FineTask(job, strategy, cluster, control, counts[i]) for i in order]
    progress = Progress(len(tasks), f"{progress_label} ({len(tasks)} points)")
    try:
        done = (executor or Serial()).map(run_fine, tasks, progress)
    finally:
        progress.close()
    out: list = [None] * len(done)
    for i, point in zip(order, done):
        out[i] = point
    return out


def evaluate_analytic(name: str, job: Job, strategy: Strategy, cluster: Cluster,
                      counts: Sequence[int] | None, margin: Margin = NO_MARGIN) -> list[PredictionPoint]:
    """``counts`` None: the heterogeneous job's one point."""
    job = as_strategy_runs(job, strategy.overlap)
    classes = [(_coarse_with_overhead(c.profile, strategy, cluster), c.count) for c in job.classes]
    for c, _ in classes:
        c.check_has_work()
    results = run_analytic(name, classes, None if counts is None else list(counts), strategy,
                           cluster, _fractions(job, strategy))
    asynchronous = strategy.mode == MODES[0]  # the MVA of async PS, not a closed form
    return [coarse_for_one_run(from_coarse(r), margin, asynchronous) for r in results]


def _fractions(job: Job, strategy: Strategy) -> tuple[float, ...]:
    if not strategy.architecture.servers or job.heterogeneous:
        return (1.0,)
    return ps_fractions(fine_profile(job.profile), strategy.ps_count)


def _coarse_with_overhead(p: AnyProfile, strategy: Strategy, cluster: Cluster) -> CoarseProfile:
    """The analytical models see the overheads, and the hosts' CPU per byte charged to ops,
    as compute time, as the simulator does."""
    a, b = cluster.link.overhead_alpha_s_per_byte, cluster.link.overhead_beta_s
    arch, host = strategy.architecture, cluster.host
    if host.charges:
        p = arch.host_ops(fine_profile(p), host)
    if a > 0 or b > 0:
        p = with_overhead(fine_profile(p), a, b, arch.pulls, pushes=not arch.parse_in_call)
    if host.charges:
        p = arch.charge_host(p, host)
    return coarse_profile(p)


def from_coarse(r: CoarseResult) -> PredictionPoint:
    return PredictionPoint(
        workers=r.workers, throughput=r.throughput, ci_low=r.throughput, ci_high=r.throughput,
        step_time_s=r.step_time_s, ops_simulated=0, bottleneck=r.bottleneck,
        utilization=dict(r.utilization), steps_measured=0, wall_s=0.0, model=r.model,
        regime=r.regime, response_time_s=dict(r.response_time_s), disciplines=dict(r.disciplines))
