"""Regimes of measured async training, from every worker's step completion times.

Two views of one run, per time window:

- throughput: examples completed in the window over its length;
- lock-step index: for every completion, the gap to the nearest completion of *another*
  worker, over the gap perfect interleaving would leave (the mean step period / W), averaged.
  0: workers finish together (a convoy on the shared links); about 1: evenly interleaved.

A regime that lasts shows up as a run whose windows all sit at one level; switching shows up
within a run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WindowStats:
    start_s: float
    throughput: float   # examples/s
    lockstep: float     # nan with one worker or no completion in the window


def windows(step_times_s, batch_size: int, start_s: float, end_s: float,
            window_s: float) -> list[WindowStats]:
    """Per-window throughput and lock-step index of one run (``step_times_s``: per worker)."""
    per_worker = [np.asarray(t, float) for t in step_times_s]
    period = mean_period_s(per_worker, start_s, end_s)
    out = []
    t = start_s
    while t + window_s <= end_s + 1e-9:
        inside = [x[(x > t) & (x <= t + window_s)] for x in per_worker]
        n = sum(len(x) for x in inside)
        out.append(WindowStats(t, batch_size * n / window_s, lockstep_index(per_worker, t, t + window_s, period)))
        t += window_s
    return out


def mean_period_s(per_worker, t0: float, t1: float) -> float:
    """Mean time between a worker's consecutive completions in (t0, t1]."""
    gaps = [np.diff(x[(x > t0) & (x <= t1)]) for x in per_worker]
    gaps = [g for g in gaps if len(g)]
    return float(np.mean(np.concatenate(gaps))) if gaps else float("nan")


def lockstep_index(per_worker, t0: float, t1: float, period_s: float | None = None) -> float:
    """Mean gap to another worker's nearest completion over period/W (module docstring);
    ``period_s``: the workers' mean step period, by default measured in (t0, t1]."""
    per_worker = [np.asarray(x, float) for x in per_worker]
    W = len(per_worker)
    period = mean_period_s(per_worker, t0, t1) if period_s is None else period_s
    if W < 2 or not period > 0:
        return float("nan")
    ideal = period / W
    gaps = []
    for i, x in enumerate(per_worker):
        others = np.sort(np.concatenate([y for j, y in enumerate(per_worker) if j != i]))
        if len(others) == 0:
            continue
        for t in x[(x > t0) & (x <= t1)]:
            k = np.searchsorted(others, t)
            near = min(abs(t - others[k]) if k < len(others) else np.inf,
                       abs(t - others[k - 1]) if k > 0 else np.inf)
            gaps.append(near)
    return float(np.mean(gaps) / ideal) if gaps and ideal > 0 else float("nan")


def dwell_times_s(stats: list[WindowStats], window_s: float, threshold: float = 0.5) -> dict:
    """Mean time spent in lock-step (index < threshold) and interleaved before switching.

    Runs of consecutive windows on one side; a run cut by the end of the measurement counts
    too, so these are lower bounds when a regime outlasts the run.
    """
    states = [s.lockstep < threshold for s in stats if not math.isnan(s.lockstep)]
    spans: dict[bool, list[int]] = {True: [], False: []}
    k = 0
    for i, st in enumerate(states):
        k += 1
        if i == len(states) - 1 or states[i + 1] != st:
            spans[st].append(k)
            k = 0
    return {"lockstep_s": window_s * float(np.mean(spans[True])) if spans[True] else 0.0,
            "interleaved_s": window_s * float(np.mean(spans[False])) if spans[False] else 0.0,
            "lockstep_share": float(np.mean(states)) if states else float("nan")}
