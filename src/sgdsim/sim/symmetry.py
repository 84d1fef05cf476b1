"""Identical ranks simulated once (issue 36, item 3).

A synchronous job whose ranks share no simulated resource (an all-reduce: each call is timed
by the topology's collective, ``arch/allreduce.py``) and draw the same deterministic step
(one worker class, one profiled step, no jitter, one transmission order) meets only at the
step barrier. From the idle state the barrier leaves, every rank runs the same timeline, so
one rank's steps are every rank's: one is simulated, with the collectives timed for all W,
and the rates are W times its own. ``tests/test_symmetry.py`` checks this against the full
simulation of every rank. Anything random per rank, a shared link or server, a timeline
(which shows every rank) or an asynchronous job is simulated rank by rank.
"""
from __future__ import annotations

from dataclasses import replace

from .config import SimConfig, WorkerClass
from .plan import topology


def mirrored(classes: list[WorkerClass], config: SimConfig) -> int:
    """How many ranks each simulated rank stands for: W when the job is symmetric, else 1."""
    W = sum(c.count for c in classes)
    if W == 1 or len(classes) != 1 or config.strategy.mode != "sync" or config.timeline:
        return 1
    ref = classes[0].profile
    if ref.n_steps != 1 or config.control.jitter_cv > 0:
        return 1
    t = topology(ref, config)
    if len(t.link_res) or t.res_shared.any() or t.ranks.shape[0] != 1:
        return 1
    return W


def simulated(classes: list[WorkerClass], mirror: int) -> list[WorkerClass]:
    """The ranks that are simulated when each stands for ``mirror``."""
    return classes if mirror == 1 else [replace(classes[0], count=classes[0].count // mirror)]
