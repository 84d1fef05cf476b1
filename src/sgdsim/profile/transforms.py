"""``Profile -> Profile`` transforms: what a standalone profile misses, added with provenance.

Every model reads the same transformed profile, so a calibration (``sgdsim calibrate``) or a
``--overhead-alpha/--overhead-beta`` reaches the simulator, the TPDS models and the baselines
alike. Each transform appends a record to ``profile.extra["transforms"]``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConfigError
from .model import COMM, COMPUTE, DOWNLINK, UPLINK, WORKER, Profile


def successor_lists(profile: Profile) -> list[list[int]]:
    """For every op, the indices of the ops that depend on it."""
    idx = profile.index()
    succ: list[list[int]] = [[] for _ in profile.ops]
    for i, op in enumerate(profile.ops):
        for d in op.deps:
            succ[idx[d]].append(i)
    return succ


def overhead_targets(profile: Profile) -> list[tuple[int, int]]:
    """(comm op, first compute op that depends on it) pairs: where its parsing cost lands."""
    succ = successor_lists(profile)
    pairs = []
    for i, op in enumerate(profile.ops):
        if op.kind == COMM:
            comp = [j for j in succ[i] if profile.ops[j].kind != COMM]
            if comp:
                pairs.append((i, min(comp)))
    return pairs


def with_overhead(profile: Profile, alpha_s_per_byte: float, beta_s: float,
                  pulls: bool = True, source: str = "--overhead-alpha/--overhead-beta",
                  pushes: bool = True) -> Profile:
    """Charge ``α·size + β`` per message to the compute op that consumes it (ICPE §3.2.1:
    deserialising received tensors is CPU work of the receiver, not link time). An
    architecture without pulls (all-reduce: ``pulls`` False) has no downlink transfers, so
    nothing is charged for them; one that parses inside its calls (``pushes`` False) charges
    its pushes in the call's time instead (``AllReduce.transfer_durations``)."""
    if not (alpha_s_per_byte >= 0 and beta_s >= 0):
        raise ConfigError(f"overheads must be non-negative, got alpha {alpha_s_per_byte}, beta {beta_s}")
    if (alpha_s_per_byte == 0 and beta_s == 0) or not (pulls or pushes):
        return profile
    extra = np.zeros(profile.n_ops)
    for c, t in overhead_targets(profile):
        if not (pulls if profile.ops[c].resource == DOWNLINK else pushes):
            continue
        extra[t] += alpha_s_per_byte * profile.ops[c].size_bytes + beta_s
    record = {"transform": "overhead", "alpha_s_per_byte": alpha_s_per_byte, "beta_s": beta_s,
              "pulls": pulls, "source": source}
    return replace(profile, durations_s=profile.durations_s + extra[None, :],
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})


def without_overlap(profile: Profile) -> Profile:
    """Transfers that wait for the whole step's compute on their side (``--no-overlap``): every
    push for the end of the backward pass, the step's first compute for every pull. What a
    framework does when a transfer waits on the device's stream instead of its gradient's
    kernel (TensorFlow 1.x, docs/validation/multigpu/), or has no per-gradient hooks.

    The step's compute is the worker's compute ops that neither follow a push (an optimizer
    step applying an all-reduce's sums) nor precede a pull, so no edge closes a cycle. A
    profile this made already comes back as it is (each entry point may pass a job on)."""
    if any(t.get("transform") == "no_overlap" for t in profile.extra.get("transforms", [])):
        return profile
    ops, idx, succ = profile.ops, profile.index(), successor_lists(profile)
    pulls = [i for i, op in enumerate(ops) if op.kind == COMM and op.resource == DOWNLINK]
    pushes = [i for i, op in enumerate(ops) if op.kind == COMM and op.resource == UPLINK]
    pushed = set(pushes)
    after_push = _reach(pushes, lambda i: succ[i])
    before_pull = _reach(pulls, lambda i: [idx[d] for d in ops[i].deps])
    step = {i for i, op in enumerate(ops) if op.kind == COMPUTE and op.resource == WORKER
            and i not in after_push and i not in before_pull}
    last = [ops[i].id for i in sorted(step) if not any(j in step for j in succ[i])]
    first = {i for i in step if not any(idx[d] in step for d in ops[i].deps)}
    pull_ids = tuple(ops[i].id for i in pulls)

    def deps(i: int, op) -> tuple[str, ...]:
        # the edges the new ones make redundant go (a push on its own gradient, a later
        # layer's compute on its own pull): the DAG a profiler of such a framework records,
        # the same as ``import pipedream --no-overlap``
        if i in pushed:
            return tuple(d for d in op.deps if idx[d] not in step) + tuple(last)
        if i in first:
            return tuple(dict.fromkeys(op.deps + pull_ids))
        return tuple(d for d in op.deps if idx[d] not in pulls_at) if i in step else op.deps

    pulls_at = set(pulls)
    new = [replace(op, deps=deps(i, op)) for i, op in enumerate(ops)]
    record = {"transform": "no_overlap", "pushes": len(pushes), "pulls": len(pulls)}
    return replace(profile, ops=tuple(new), job=replace(profile.job, overlap=False),
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})


def _reach(starts: list[int], neighbours) -> set[int]:
    """``starts`` and every op reached from them through ``neighbours``."""
    seen, todo = set(starts), list(starts)
    while todo:
        for j in neighbours(todo.pop()):
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return seen


ALLREDUCE_COMPUTE_SUFFIX = "~compute"  # id of the virtual op that shadows an all-reduce call


def with_allreduce_compute(profile: Profile) -> Profile:
    """One virtual compute op per all-reduce call (Tianshu §3.3): NCCL occupies some of the
    GPU's SMs (16 of a V100's 80) while it runs, so compute that overlaps an all-reduce slows
    down. The virtual op takes the call's dependencies and runs on the worker's compute; its
    duration, ``share`` times the call's, is set by the simulator's plan, which alone knows the
    call's time (``sim/plan.py``). Inserted right after its call; the plan serves it before any
    other ready compute, so it lands while the call runs."""
    if any(op.id.endswith(ALLREDUCE_COMPUTE_SUFFIX) for op in profile.ops):
        return profile  # already shadowed
    ops, cols = [], []
    for i, op in enumerate(profile.ops):
        ops.append(op)
        cols.append(i)
        if op.resource == UPLINK and op.kind == COMM:
            ops.append(replace(op, id=op.id + ALLREDUCE_COMPUTE_SUFFIX, name=f"{op.name} (compute share)",
                               kind=COMPUTE, resource=WORKER, size_bytes=0.0, ps=0))
            cols.append(-1)
    return with_virtual_ops(profile, ops, cols, "allreduce_compute")


def with_virtual_ops(profile: Profile, ops: list, cols: list[int], transform: str) -> Profile:
    """The profile with ``ops``, where ``cols`` gives each one's column of the old durations
    (−1: a virtual op, of duration 0 until someone sets it); recorded as ``transform``."""
    if len(ops) == profile.n_ops:
        return profile
    take = np.array(cols)
    record = {"transform": transform, "virtual_ops": len(ops) - profile.n_ops}
    return replace(profile, ops=tuple(ops), durations_s=take_columns(profile.durations_s, take, 0.0),
                   comm_s=take_columns(profile.comm_s, take, np.nan),
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})


def take_columns(a: np.ndarray | None, take: np.ndarray, fill: float) -> np.ndarray | None:
    """Per-step columns of the ops a transform keeps, in its new order: column ``take[j]`` of
    ``a``, or ``fill`` where ``take[j]`` < 0 (an op the transform added)."""
    if a is None:
        return None
    out = a[:, np.maximum(take, 0)].copy()
    out[:, take < 0] = fill
    return out


def allreduce_compute_pairs(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(virtual op, its all-reduce call) index pairs of ``with_allreduce_compute``."""
    idx = profile.index()
    pairs = [(i, idx[op.id.removesuffix(ALLREDUCE_COMPUTE_SUFFIX)]) for i, op in enumerate(profile.ops)
             if op.id.endswith(ALLREDUCE_COMPUTE_SUFFIX) and op.kind == COMPUTE]
    arr = np.array(pairs, np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]
