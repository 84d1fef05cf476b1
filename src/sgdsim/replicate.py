"""One simulated point from independent replications: mean, an interval for one run, regimes.

Async runs settle into long-lived states (lock-step convoys on the shared links, or
interleaving) that depend on how the workers started; one run's batch-means interval cannot
see the others. So by default every point is a set of independent runs (different seeds,
start offsets spread evenly over the replications, ``sim/starts.py``), executed in rounds of
``ROUND`` on all cores (the compiled core releases the GIL):

- throughput: their mean (what a long job averages over its restarts);
- interval: a 95 % prediction interval for one run, mean ± t·s·sqrt(1 + 1/R), so that
  another seed, or a lab run, lands inside it; never narrower than one run's own interval;
- regimes: the two groups when the runs are bimodal (``sim/regimes.py``).

Rounds stop when every run gave the same answer (a deterministic configuration), when the mean
is known to ``REL_TARGET`` after at least two rounds, after ``MAX_ROUNDS``, or when the next
round would overrun the op budget (``SimConfig.auto_max_ops``). Round sizes do not depend
on the machine, so results do not either. A bimodal point needs the rounds: with at most 8
runs the lab's two-worker means moved by up to 17 % between seeds, one of them outside
another seed's interval; with 16, by up to 11 %, each inside every other's interval.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from .point import PredictionPoint
from .sim import SimConfig, WorkerClass, simulate
from .spec import SHARINGS
from .sim.regimes import split_modes
from .sim.simulate import SimResult
from .sim.starts import start_points
from .sim.stats import mean_half_width, prediction_half_width

ROUND = 4            # replications per round (and the minimum)
MAX_ROUNDS = 4
REL_TARGET = 0.02    # stop once the 95 % CI of the mean is within ±2 % of it
# why a point's rounds ended before its mean was known to REL_TARGET (PredictionPoint.rounds_stopped)
CAP, BUDGET, UNCONFIRMED = "cap", "budget", "unconfirmed"
STOPS = (CAP, BUDGET, UNCONFIRMED)
MAX_THREADS: int | None = None  # None: every core (a process pool sets 1 per process)


def simulate_point(classes: list[WorkerClass], config: SimConfig,
                   replications: int | None = None) -> PredictionPoint:
    """``replications``: None = automatic rounds; 1 = one run (batch-means interval); R = R runs."""
    if replications == 1:  # replication 0, unless the caller placed the start
        cfg = config if config.start_point else replication_configs(classes, config, [0])[0]
        return _single(cfg, _run_all(classes, [cfg]))
    fixed = replications is not None
    per_round, rounds = (replications, 1) if fixed else (ROUND, MAX_ROUNDS)
    # every replication measures max(20·W, 100) steps after the warm-up, without doubling
    base = config if config.control.steps_per_worker is not None else replace(config, ci_rel_target=math.inf)
    reps: list[PredictionPoint] = []
    budget_stop = False
    for _ in range(rounds):
        seeds = range(len(reps), len(reps) + per_round)
        reps += [_single(c, r) for c, r in _round(classes, base, seeds)]
        if fixed or _converged(reps):
            break
        if _over_budget(reps, per_round, config.auto_max_ops):
            budget_stop = True
            break
    point = _combine(reps)
    if fixed or _converged(reps):
        return point
    return replace(point, regime=_not_met(reps, budget_stop),
                   rounds_stopped=_stop(point.mean_half_width_rel, budget_stop))


def _stop(rel: float, budget_stop: bool) -> str:
    if rel <= REL_TARGET:  # only after one round (two would have converged)
        return UNCONFIRMED
    return BUDGET if budget_stop else CAP


def _not_met(reps: list[PredictionPoint], budget_stop: bool) -> str:
    """The note of a point whose rounds stopped (cap or op budget) before the mean was known
    to ``REL_TARGET``. Async runs lock into the offsets they start with: each replication's
    throughput is set by its start point (under fair sharing, the same values with 10 times
    longer runs; a hardware file's TCP dynamics make them drift over hundreds of steps,
    docs/validation/torch-repeats-w2/), so the spread is between runs, and the interval (for
    one run) is as wide as it is. A point the op budget stopped after one round may be known
    to better than the target, unconfirmed
    (``_converged`` wants two rounds): it says so rather than "not met"."""
    xs = np.array([r.throughput for r in reps])
    m = float(xs.mean())
    rel = mean_half_width(xs) / m
    runs = f"runs from {xs.min():.1f} to {xs.max():.1f}, set by their start offsets"
    if _stop(rel, budget_stop) == UNCONFIRMED:
        return (f"mean known to ±{_percent(rel)} from {len(xs)} runs, one round: the op budget "
                f"left no room for a second to confirm it ({runs})")
    stop = ": the op budget stopped the rounds" if budget_stop else ", the most it runs"
    return (f"mean known to ±{_percent(rel)} (target ±{REL_TARGET:.0%} not met after "
            f"{len(xs)} runs{stop}; {runs})")


_STOP_TEXT = {
    CAP: "short of the ±{target} target after {runs}, the most it runs: async runs differ by "
         "their start offsets, and the interval holds that spread",
    BUDGET: "short of the ±{target} target after {runs}: the op budget stopped the rounds",
    UNCONFIRMED: "from {runs}, one round: the op budget left no room for a second to confirm "
                 "the target (±{target})",
}


def stop_notes(rows) -> list[str]:
    """One line per reason (and run count) for the simulated points whose rounds stopped
    before their mean was known to ``REL_TARGET``: their worker counts and how well their
    means are known (each point's own note is its ``regime``). ``rows``:
    ``PredictionPoint.to_dict()``."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        if r["model"] == "fine" and r.get("rounds_stopped"):
            groups.setdefault((r["rounds_stopped"], r["replications"]), []).append(r)
    notes = []
    for (why, n), rs in groups.items():
        rels = sorted(r["mean_half_width_rel"] for r in rs)
        known = f"±{_percent(rels[0])}" + (f" to ±{_percent(rels[-1])}" if len(rs) > 1 else "")
        known += "" if why == UNCONFIRMED else ","
        runs = f"{n} runs" + (" each" if len(rs) > 1 else "")
        text = _STOP_TEXT[why].format(runs=runs, target=f"{REL_TARGET:.0%}")
        notes.append(f"W={_ranges([r['workers'] for r in rs])}: mean{'s' if len(rs) > 1 else ''} "
                     f"known to {known} {text}")
    return notes


def _ranges(workers: list[int]) -> str:
    """2,3,4,6 -> '2-4, 6'."""
    spans: list[list[int]] = []
    for w in sorted(workers):
        if spans and w == spans[-1][1] + 1:
            spans[-1][1] = w
        else:
            spans.append([w, w])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def _percent(rel: float) -> str:
    """One decimal, or two where one would print the target itself for a value above it."""
    one = f"{rel:.1%}"
    return f"{rel:.2%}" if rel > REL_TARGET and one == f"{REL_TARGET:.1%}" else one


def replication_configs(classes, base: SimConfig, indices) -> list[SimConfig]:
    """Replication i: its own seed, and point i of an even design over the start offsets
    (``sim/starts.py``); the first keeps the timeline."""
    starts = start_points(base.seed, sum(c.count for c in classes) - 1, indices)
    return [replace(base, replication=i, start_point=u) for i, u in zip(indices, starts)]


def _round(classes, base: SimConfig, seeds):
    """(config, runs) per replication; a mixed sharing policy is two runs."""
    cfgs = replication_configs(classes, base, seeds)
    results = _run_all(classes, cfgs)
    k = len(_runs_of(base))
    return [(c, results[i * k:(i + 1) * k]) for i, c in enumerate(cfgs)]


def _runs_of(config: SimConfig) -> list[SimConfig]:
    runs = SHARINGS[config.sharing].runs
    if not runs:
        return [config]
    first, second = runs
    return [replace(config, policy=first), replace(config, policy=second, timeline_off=True)]


def _run_all(classes, configs: list[SimConfig]) -> list[SimResult]:
    jobs = [run for c in configs for run in _runs_of(c)]
    threads = min(len(jobs), MAX_THREADS or os.cpu_count() or 1)
    if threads <= 1:
        return [simulate(classes, c) for c in jobs]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda c: simulate(classes, c), jobs))


def _single(config: SimConfig, runs: list[SimResult]) -> PredictionPoint:
    """One replication: a run, or a mixed policy's two runs (hybrid: a ps and an fcfs run).

    The mix is of throughputs, x = (1 − w)·x_ps + w·x_fcfs: TPDS §3.2.1 runs the fine model
    with both sharing models and "use[s] the average of their throughput estimates" (w = 0.5).
    The coarse Eq. 9 averages step times instead, so on a deterministic profile the fine
    hybrid is above the coarse one by (1 − w)·w·(x_fcfs − x_ps)²/(w·x_ps + (1 − w)·x_fcfs).
    Measured by replaying the six committed sync PS lab points (async, quick and
    heldout-margin grids; docs/simulator.md): mean |error| 3.3 %, max 5.0 %, 3 of 6 intervals
    holding, against 5.0 % / 11.1 % / 2 of 6 with the step-time mix.
    """
    pts = [_from_result(r) for r in runs]
    if len(pts) == 1:
        return pts[0]
    w = config.cluster.contention.fcfs_weight
    a, b = pts
    x = hybrid_mean(a.throughput, b.throughput, w)
    point = _merge(pts, x, hybrid_mean(a.ci_low, b.ci_low, w), hybrid_mean(a.ci_high, b.ci_high, w))
    if x > 0 and a.throughput > 0:  # the step that gives x: K·b / x
        point = replace(point, step_time_s=a.step_time_s * a.throughput / x)
    return point


def hybrid_mean(x_ps: float, x_fcfs: float, w: float) -> float:
    """TPDS §3.2.1's mean of the two runs' throughputs, weighted by the FCFS weight ``w``."""
    if w <= 0.0:
        return x_ps
    if w >= 1.0:
        return x_fcfs
    return (1 - w) * x_ps + w * x_fcfs


def _converged(reps: list[PredictionPoint]) -> bool:
    """Identical runs (a deterministic configuration) end after one round; otherwise a round
    of 4 can all land in one regime and look tight, so at least two rounds are run."""
    xs = np.array([r.throughput for r in reps])
    m = float(xs.mean())
    if m <= 0 or float(xs.max() - xs.min()) <= 1e-9 * m:
        return True
    if len(xs) < 2 * ROUND:
        return False
    return mean_half_width(xs) <= REL_TARGET * m


def _over_budget(reps: list[PredictionPoint], per_round: int, budget: int) -> bool:
    spent = sum(r.ops_simulated for r in reps)
    return spent + spent / len(reps) * per_round > budget


def _combine(reps: list[PredictionPoint]) -> PredictionPoint:
    xs = np.array([r.throughput for r in reps])
    R, m = len(xs), float(xs.mean())
    own = [(r.ci_high - r.ci_low) / 2 for r in reps if math.isfinite(r.ci_high)]
    spread = prediction_half_width(xs)
    hw = max(spread, float(np.mean(own))) if own else spread
    # runs that differ are known no better than one step in a run's window
    if float(xs.max() - xs.min()) > 1e-9 * m:
        hw = max(hw, m / max(1, min(r.steps_measured for r in reps)))
    point = _merge(reps, m, m - hw, m + hw)
    rel = mean_half_width(xs) / m if m > 0 and float(xs.max() - xs.min()) > 1e-9 * m else 0.0
    return replace(point, replications=R, regimes=split_modes(xs) or (), mean_half_width_rel=rel)


def _merge(points: list[PredictionPoint], throughput: float, lo: float, hi: float) -> PredictionPoint:
    """Several runs of one point: means of rates and utilizations, sums of work."""
    util = {k: sum(p.utilization[k] for p in points) / len(points) for k in points[0].utilization}
    return PredictionPoint(
        workers=points[0].workers, throughput=throughput, ci_low=max(0.0, lo), ci_high=hi,
        step_time_s=sum(p.step_time_s for p in points) / len(points),
        ops_simulated=sum(p.ops_simulated for p in points),
        bottleneck=max(util, key=lambda k: util[k]), utilization=util,
        steps_measured=sum(p.steps_measured for p in points), wall_s=sum(p.wall_s for p in points),
        timeline=points[0].timeline)


def _from_result(r: SimResult) -> PredictionPoint:
    return PredictionPoint(
        workers=r.workers, throughput=r.throughput, ci_low=r.ci_low, ci_high=r.ci_high,
        step_time_s=r.step_time_s, ops_simulated=r.ops_simulated, bottleneck=r.bottleneck,
        utilization={k: float(v) for k, v in r.utilization.items()},
        steps_measured=r.steps_measured, wall_s=r.wall_s, timeline=r.timeline)
