"""Measured layers -> a ``Profile`` with the PipeDream importer's ops, deps and order.

Rules (docs/profile-format.md, "Importing PipeDream profiles"), with the layer graph found by
the profiler instead of read from graph.txt:

* per layer L: ``fwd:L``, ``bwd:L`` on the worker; per layer with parameters ``down:L``,
  ``up:L`` (size = the layer's parameter bytes) and ``upd:L`` on the PS (measured update);
* ``fwd:L`` after ``fwd:P`` for every producer P; ``bwd:L`` after ``bwd:C`` for every consumer
  C, a sink's after the forward of every sink; ``upd:L`` after ``up:L``;
* overlap: ``fwd:L`` also after ``down:L``, ``up:L`` after ``bwd:L``; no overlap: every root
  forward after all downlinks, every uplink after every terminal (root) backward;
* order: downlinks and forwards in topological order, backwards reversed, then uplinks and
  updates in gradient-ready order (measured, where the importer can only assume the reverse
  topological order).
"""
from __future__ import annotations

import numpy as np

from ..profile.io import validate_profile
from ..profile.model import COMM, COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Job, Op, Profile


def build_ops(names, labels, deps, param_bytes, ready_order, overlap: bool) -> list[Op]:
    """``deps[i]``: producers of layer i (earlier indices: the layers are topological)."""
    n = len(names)
    succs: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for p in deps[i]:
            succs[p].append(i)
    with_params = [i for i in range(n) if param_bytes[i] > 0]
    sinks = [i for i in range(n) if not succs[i]]
    all_down = [f"down:{names[i]}" for i in with_params]
    terminal_bwd = [f"bwd:{names[i]}" for i in reversed(range(n)) if not deps[i]]
    ready = [i for i in ready_order if param_bytes[i] > 0]

    def op(prefix, i, kind, resource, op_deps, size=0.0) -> Op:
        return Op(id=f"{prefix}:{names[i]}", name=labels[i], layer=names[i], kind=kind,
                  resource=resource, deps=tuple(op_deps), size_bytes=float(size))

    ops = [op("down", i, COMM, DOWNLINK, [], param_bytes[i]) for i in with_params]
    for i in range(n):
        own = [f"down:{names[i]}"] if overlap and param_bytes[i] > 0 else []
        root = all_down if not overlap and not deps[i] else []
        ops.append(op("fwd", i, COMPUTE, WORKER,
                      own + root + [f"fwd:{names[p]}" for p in sorted(deps[i])]))
    for i in reversed(range(n)):
        back = [f"bwd:{names[s]}" for s in succs[i]] or [f"fwd:{names[s]}" for s in sinks]
        ops.append(op("bwd", i, COMPUTE, WORKER, back))
    ops.extend(op("up", i, COMM, UPLINK, [f"bwd:{names[i]}"] if overlap else terminal_bwd,
                  param_bytes[i]) for i in ready)
    ops.extend(op("upd", i, COMPUTE, PS, [f"up:{names[i]}"]) for i in ready)
    return ops


def build_profile(measured, job: Job, overlap: bool, extra: dict) -> Profile:
    m = measured
    ops = build_ops(m.names, m.labels, m.deps, m.param_bytes, m.ready_order, overlap)
    index = {op.id: k for k, op in enumerate(ops)}
    steps = m.fwd.shape[0]
    durations = np.zeros((steps, len(ops)))
    for i, name in enumerate(m.names):
        durations[:, index[f"fwd:{name}"]] = m.fwd[:, i]
        durations[:, index[f"bwd:{name}"]] = m.bwd[:, i]
        if f"upd:{name}" in index:
            durations[:, index[f"upd:{name}"]] = m.upd[:, i]
    profile = Profile(job=job, ops=tuple(ops), durations_s=durations, extra=extra)
    return validate_profile(profile, f"sgdsim profile {job.model}")
