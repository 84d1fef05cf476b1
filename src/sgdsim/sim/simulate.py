"""Run one configuration: warm-up, measurement in rounds until the CI is tight, results."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..compiled import CORE, warn_if_pure
from ..errors import ConfigError, SgdsimError
from ..profile.model import Profile
from . import engine
from .config import SimConfig, WorkerClass
from .flows import remaining
from .heap import make_heaps
from .kernel import make_kernel
from ..spec import SHARINGS
from .links import make_links
from .plan import build_plan
from .stalls import stall_pool
from .symmetry import mirrored, simulated
from .state import SAMPLES_PER_WORKER, for_backend, make_state
from .stats import Estimate, estimate, lognormal_factors

TIMELINE_CHUNK = 1 << 16


class SimulationStalled(SgdsimError):
    """No event is pending but steps are unfinished (should not happen for a valid DAG)."""


@dataclass(frozen=True)
class Timeline:
    """Executed chunks: parallel arrays, one entry per chunk (times in seconds)."""

    worker: np.ndarray
    resource: np.ndarray
    op: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    step: np.ndarray
    resource_names: tuple[str, ...]
    op_ids: tuple[str, ...]
    op_names: tuple[str, ...]
    op_ps: np.ndarray
    worker_class: tuple[str, ...]


@dataclass(frozen=True)
class SimResult:
    workers: int
    throughput: float  # examples/s
    ci_low: float
    ci_high: float
    step_time_s: float  # time per step of a worker (sum of batches / throughput)
    ops_simulated: int
    steps_measured: int
    measured_s: float  # simulated time in the measurement window
    utilization: dict[str, float]
    bottleneck: str
    wall_s: float
    link_bytes: dict[str, dict[str, float]] = field(default_factory=dict)
    timeline: Timeline | None = None


# the engine's entry points: the compiled module's, or engine.py's as Python (same signatures)
ENGINE = CORE if CORE is not None else engine


class _Sim:
    """Holds one configuration's arrays and drives the compiled engine over them."""

    def __init__(self, classes: list[WorkerClass], config: SimConfig, workers: int | None = None):
        warn_if_pure()
        self.config = config
        plan, self.info, bw, cap = build_plan(classes, config, workers)
        self.bw_Bps = bw
        W, R, n, L = plan.W, plan.R, plan.n_ops, len(plan.link_res)
        self.rng = np.random.default_rng(np.random.SeedSequence([config.seed, 7]))
        self.P = for_backend(plan)
        self.K = for_backend(make_kernel(W * R + L + W + L))
        self.LK = for_backend(make_links(L, W, SHARINGS[config.sharing].code, bw, cap,
                                         _share_noise(config, self.info.ps_count),
                                         _two_way_grid(config, W),
                                         _join(config, self.info.ps_count),
                                         _stalls(config, self.info.ps_count),
                                         _joined(config, self.info.ps_count)))
        caps = np.full(W * R, n, np.int64)
        caps[:R][plan.res_shared == 1] = W * n  # a shared resource's queue (worker 0's) holds everyone's
        self.Q = for_backend(make_heaps(W * R, n, W * n, caps))
        tl = TIMELINE_CHUNK if config.timeline else 0
        self.S = for_backend(make_state(plan, L, 1024, tl, (*config.cluster.nodes.host_contention,
                                                             float(self.info.shared_cores))))
        self.plan, self.timeline_parts = plan, []
        self.classes_ref = classes[0].profile
        self._refill()
        self._bind()
        ENGINE.start(*self.core, for_backend(self._offsets(classes)))

    def _bind(self):
        """The arguments of the engine's entry points: the compiled core's typed views over
        this simulation's arrays (the tuples themselves on the pure-Python path)."""
        args = (self.P, self.S, self.K, self.LK, self.Q)
        if CORE is not None:
            args = tuple(getattr(CORE, type(a).__name__)(a) for a in args)
        self.core = args

    def _offsets(self, classes) -> np.ndarray:
        """Async workers start at offsets spread over one steady-state step, so that a
        deterministic profile does not keep them in artificial lockstep; sync starts together.
        Worker 1 starts at 0 and the others at ``start_point`` (replicate.py's even design over
        replications) or at random. One steady-state step: an uncontended step, or W transfers
        of the model through one PS's link when that is longer. Spread over the uncontended
        step only, W = 10 ResNet-50 workers on 1 Gbps start congested and need ~40 steps each
        to reach steady state (−12 % after 0 warm-up steps, −2 % after 20); spread over the
        link-bound cycle they need ~10."""
        W = self.plan.W
        if self.config.strategy.mode == "sync" or W == 1:
            return np.zeros(W)
        prof = classes[0].profile
        link_s = prof.model_bytes() / self.info.ps_count / self.config.cluster.link.bandwidth_Bps
        step_s = prof.durations_s.sum(axis=1).mean() + 2 * link_s
        u = self.config.start_point
        if not u:
            u = self.rng.uniform(size=W - 1)
        elif len(u) != W - 1:
            raise ConfigError(f"a start point for {W} workers has {W - 1} coordinates, got {len(u)}")
        return np.concatenate([[0.0], np.asarray(u, float)]) * max(step_s, W * link_s)

    def _refill(self):
        """Each worker's used step samples replaced by fresh draws after those it has not used.
        One draw for all workers: per element it is the draw worker by worker (numpy's bounded
        integers take one value of the generator per element, whatever the shape), so the
        samples are those of a loop over the workers."""
        S, W, cap = self.S, self.plan.W, SAMPLES_PER_WORKER
        n_codes = np.asarray(self.plan.worker_rows * self.info.n_perm, np.int64)
        used = np.minimum(np.asarray(S.samp_cur[:W], np.int64), cap)
        fresh = self.rng.integers(0, np.repeat(n_codes, used)) if used.any() else used[:0]
        old = np.asarray(S.samp, np.int64).reshape(W, cap)
        new = np.empty_like(old)
        end = 0
        for w, u in enumerate(used.tolist()):
            new[w, :cap - u] = old[w, u:]
            new[w, cap - u:] = fresh[end:end + u]
            end += u
        S.samp[:] = new.ravel().tolist() if isinstance(S.samp, list) else new.ravel()
        S.samp_cur[:W] = _like(S.samp_cur, [0] * W)
        S.ctr[engine.C_REFILL] = 0

    def _flush_timeline(self):
        S, k = self.S, int(self.S.ctr[engine.C_TIMELINE])
        self.timeline_parts.append(tuple(np.array(a[:k]) for a in
                                         (S.tl_w, S.tl_r, S.tl_op, S.tl_t0, S.tl_t1, S.tl_step)))
        S.ctr[engine.C_TIMELINE] = 0

    def completions(self) -> int:
        return int(self.S.ctr[engine.C_COMPLETIONS])

    def ops(self) -> int:
        return int(self.S.ctr[engine.C_OPS])

    def now(self) -> float:
        return float(self.K.clock[0])

    def run_until(self, total: int, max_ops: int) -> bool:
        """Run to ``total`` completed steps; False if the op budget ran out first."""
        if len(self.S.comp_t) < total:
            grow = max(total, 2 * len(self.S.comp_t)) - len(self.S.comp_t)
            self.S = self.S._replace(comp_t=_concat(self.S.comp_t, [0.0] * grow),
                                     comp_w=_concat(self.S.comp_w, [0] * grow))
            self._bind()
        while True:
            status = ENGINE.run(*self.core, total, max_ops)
            if status == engine.REFILL:
                self._refill()
            elif status == engine.TIMELINE_FULL:
                self._flush_timeline()
            elif status == engine.STALLED:
                raise SimulationStalled("simulation stalled: no pending event but unfinished steps")
            else:
                return status == engine.DONE


NOISE_POOL = 4096
JOINED_POOL = 4091  # prime, like the stalls' pool, so the three draws decorrelate


def _two_way_grid(config: SimConfig, W: int) -> np.ndarray | None:
    """The two-way rule for up to W flows per direction; None when it is off or cannot
    matter (FCFS serves one flow per direction, so there is never a surplus)."""
    rule = config.two_way
    return rule.grid(W + 1) if rule.active and SHARINGS[config.sharing].fair else None


def _join(config: SimConfig, ps_count: int) -> tuple:
    """The late-comer's boosts, ages and delays (``sharing/fair.py``): weights, like ``--share-cv``."""
    lc = config.late_comer
    if lc.boost != (1.0, 1.0) and ps_count > 1:
        raise ConfigError("--join-boost applies to one parameter server (several PS share worker "
                          "NICs by water-filling): use --join-boost 1 with this profile")
    return lc.boost, lc.after_s, lc.delay_s


def _joined(config: SimConfig, ps_count: int) -> np.ndarray:
    """The (2, n, 2) pool of (after_s, share) of a lone flow that one the other way joined
    (``sharing/fair.py``): per direction its measured draws, resampled with a seeded generator,
    or else its fixed step. A correction of the measured two-way table for one PS, like its
    busy shares (``Cluster.two_way_table_for``)."""
    shares, after_s, draws = config.joined
    steps = list(zip(after_s, shares))
    rule = config.cluster.contention.two_way
    if (shares != (1.0, 1.0) or any(draws)) and (ps_count > 1 or rule.table is None):
        raise ConfigError("two_way_joined corrects a measured two-way table for one parameter "
                          "server: give the table, with one PS")
    if not any(draws):
        return np.array([[step] for step in steps])
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 19]))
    return np.stack([np.asarray(d)[rng.integers(len(d), size=JOINED_POOL)] if d
                     else np.tile(step, (JOINED_POOL, 1)) for d, step in zip(draws, steps)])


def _stalls(config: SimConfig, ps_count: int) -> np.ndarray | None:
    """The seeded pool of waits of transfers that start against traffic (``sim/stalls.py``)."""
    st = config.cluster.contention.stalls
    if ps_count > 1 and st.active:
        raise ConfigError("--stall-prob and --stall-incumbent apply to one parameter server: use 0 "
                          "with this profile")
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 17]))
    return stall_pool(rng, st.prob, st.mean_s, st.incumbent_prob, st.incumbent_mean_s)


def _share_noise(config: SimConfig, ps_count: int) -> np.ndarray | None:
    """Lognormal flow weights of mean 1 and CV ``share_cv`` (``sharing/fair.py``)."""
    share_cv = config.late_comer.share_cv
    if share_cv <= 0:
        return None
    if ps_count > 1:
        raise ConfigError("--share-cv applies to one parameter server (several PS share worker "
                          "NICs by water-filling): use --share-cv 0 with this profile")
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 13]))
    return lognormal_factors(rng, share_cv, NOISE_POOL)


def _like(ref, values):
    return values if isinstance(ref, list) else np.asarray(values, dtype=ref.dtype)


def _concat(ref, extra):
    return ref + extra if isinstance(ref, list) else np.concatenate([ref, np.asarray(extra, ref.dtype)])


_PREPARED: dict[tuple, tuple[Profile, Profile]] = {}


def _prepared(profile: Profile, config: SimConfig) -> Profile:
    """The profile as the architecture runs it (``Architecture.prepare``), memoised by
    identity: the replications of a point share one transformed profile, and so one topology."""
    key = (id(profile), config.strategy.arch, config.strategy.bucket_size_bytes,
           config.cluster.nodes.allreduce_compute_share > 0, config.cluster.host.server_s_per_byte > 0)
    hit = _PREPARED.get(key)
    if hit is None or hit[0] is not profile:
        if len(_PREPARED) > 64:
            _PREPARED.clear()
        hit = _PREPARED[key] = (profile, config.strategy.architecture.prepare(profile, config))
    return hit[1]


def simulate(classes: list[WorkerClass], config: SimConfig) -> SimResult:
    """Simulate ``classes`` of workers under ``config``; see ``SimConfig`` for the options."""
    if SHARINGS[config.sharing].code is None:
        raise ConfigError(f"sharing {config.sharing!r} is the mean of several runs: use sgdsim.predict")
    classes = [replace(c, profile=_prepared(c.profile, config)) for c in classes]
    W_job, mirror = sum(c.count for c in classes), mirrored(classes, config)
    classes = simulated(classes, mirror)
    _check_budget(classes, config)
    wall0 = time.perf_counter()
    sim = _Sim(classes, config, W_job)
    W = sim.plan.W
    warm = config.control.warmup_steps * W
    if warm and not sim.run_until(warm, config.max_ops):
        raise ConfigError(_budget_message(config, W, "the warm-up"))
    ENGINE.open_window(*sim.core[:4])
    t0, c0 = sim.now(), sim.completions()
    est = _measure(sim, config, t0, c0)
    if est.duration_s <= 0:
        raise ConfigError("a step takes no time in this configuration (all durations and sizes are 0)")
    ENGINE.sync_links(sim.core[1], sim.core[3], sim.now())
    if config.timeline:
        sim._flush_timeline()
    return _result(sim, est, t0, wall0, mirror)


def _measure(sim: _Sim, config: SimConfig, t0: float, c0: int) -> Estimate:
    W = sim.plan.W
    steps = config.control.steps_per_worker
    if steps is not None:
        if not sim.run_until(c0 + steps * W, config.max_ops):
            raise ConfigError(_budget_message(config, W, f"{steps} steps"))
        return _estimate(sim, t0, c0)
    n = max(config.min_steps_per_worker * W, 100)
    while True:
        finished = sim.run_until(c0 + n, config.auto_max_ops)
        est = _estimate(sim, t0, c0)
        if not finished or est.rel_half_width <= config.ci_rel_target:
            return est
        per_step = sim.ops() / max(1, sim.completions())
        if sim.ops() + per_step * n > config.auto_max_ops:
            return est  # doubling again would run out of budget mid-way: stop inside it
        n *= 2


# Operations the engine counts per worker step, at least (measured 0.6-1.0 x the profile's op
# count on the bundled profiles): a lower bound, so only a run that cannot fit is refused.
MIN_OPS_PER_PROFILED_OP = 0.4


def _check_budget(classes: list[WorkerClass], config: SimConfig) -> None:
    """A fixed number of steps that cannot fit the op budget is refused before the run (it
    would otherwise run for minutes and then fail)."""
    steps = config.control.warmup_steps + (config.control.steps_per_worker or 0)
    need = sum(c.count * c.profile.n_ops for c in classes) * steps * MIN_OPS_PER_PROFILED_OP
    if need > config.max_ops:
        W = sum(c.count for c in classes)
        raise ConfigError(_budget_message(config, W, f"{steps} steps (warm-up included)"))


def _budget_message(config: SimConfig, W: int, what: str) -> str:
    return (f"W={W}: {what} per worker need more than the simulator's budget of "
            f"{config.max_ops:,} operations; lower --steps, --warmup or the worker count")


def _estimate(sim: _Sim, t0: float, c0: int) -> Estimate:
    c = sim.completions()
    times = np.asarray(sim.S.comp_t[c0:c], float)
    workers = np.asarray(sim.S.comp_w[c0:c], int)
    return estimate(t0, times, workers, sim.info.worker_batch)


def _result(sim: _Sim, est: Estimate, t0: float, wall0: float, mirror: int) -> SimResult:
    """``mirror``: the ranks each simulated rank stands for (``sim/symmetry.py``); rates and
    step counts are the job's, ops those simulated."""
    util, link_bytes = _utilization(sim, est.duration_s)
    bottleneck = max(util, key=lambda k: util[k]) if util else ""
    thr, hw = est.throughput * mirror, est.half_width * mirror
    return SimResult(
        workers=sim.plan.W * mirror, throughput=thr, ci_low=max(0.0, thr - hw), ci_high=thr + hw,
        step_time_s=float(sim.info.worker_batch.sum()) / est.throughput if est.throughput > 0 else float("inf"),
        ops_simulated=sim.ops(), steps_measured=est.steps * mirror, measured_s=est.duration_s,
        utilization=util, bottleneck=bottleneck, wall_s=time.perf_counter() - wall0,
        link_bytes=link_bytes, timeline=_timeline(sim) if sim.config.timeline else None,
    )


def _utilization(sim: _Sim, T: float):
    P, S, LK, info = sim.plan, sim.S, sim.LK, sim.info
    busy = np.asarray(S.busy, float).reshape(P.W, P.R)
    util: dict[str, float] = {}
    link_bytes: dict[str, dict[str, float]] = {}
    for r, name in enumerate(info.resource_names):
        l = int(P.res_link[r])
        if l < 0:  # a shared resource's busy time is all in worker 0's slot
            used = busy[:, r].sum() if P.res_shared[r] else busy[:, r].mean()
            util[name] = float(used / T) if T > 0 else 0.0
            continue
        carried = float(LK.bytes[l])
        util[name] = (carried - float(S.bytes0[l])) / (sim.bw_Bps[l] * T) if T > 0 else 0.0
        link_bytes[name] = {"carried": carried, "completed_chunks": float(S.sent[l]),
                            "in_flight": _in_flight(sim, l, r)}
    return util, link_bytes


def _in_flight(sim: _Sim, l: int, r: int) -> float:
    """Bytes already sent of chunks still in flight on link l."""
    P, S, LK = sim.plan, sim.S, sim.LK
    total = 0.0
    for w in range(P.W):
        f = l * P.W + w
        if LK.on[f] and S.run_op[w * P.R + r] >= 0:
            total += float(S.run_bytes[w * P.R + r]) - remaining(LK, l, f)
    return total


def _timeline(sim: _Sim) -> Timeline:
    parts = sim.timeline_parts
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(6)]
    ops = sim.info
    return Timeline(*cols, resource_names=ops.resource_names,
                    op_ids=tuple(o.id for o in sim.classes_ref.ops),
                    op_names=tuple(o.name for o in sim.classes_ref.ops),
                    op_ps=ops.op_ps, worker_class=ops.worker_class)
