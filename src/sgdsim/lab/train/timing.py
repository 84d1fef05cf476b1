"""Per-layer timing of a training step, and sgdsim profiles built from it.

``LayerTimer`` times each layer's forward (its pre-hook to its hook) and backward. A layer's
backward starts when the autograd node that produced its output runs (a pre-hook on that node,
registered during the forward) and lasts until the next layer's backward starts or
``backward()`` returns: the first layer is timed too (its weight gradients included), which
``register_full_backward_hook`` would miss when the input needs no gradient.

The profile is the PipeDream importer's DAG for a chain of layers in call order (the built-in
models are ``nn.Sequential``; a custom model that branches is profiled as a chain): per layer
``fwd:L``/``bwd:L``, and per layer with parameters ``down:L``, ``up:L`` (its parameter bytes)
and ``upd:L``. Overlap: ``fwd:L`` after ``down:L`` and ``up:L`` after ``bwd:L``; no overlap:
the first forward after every downlink, every uplink after the last backward.
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import torch

from ...profile.io import validate_profile
from ...profile.model import COMM, COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Job, Op, Profile
from .models import find_layers, load_workload, param_layers

FRAMEWORK = "pytorch (sgdsim lab)"
DEVICE = "cpu, 1 thread"


class LayerTimer:
    def __init__(self, model: torch.nn.Module):
        self.layers = [name for name, _ in find_layers(model)]
        self.order: list[str] = []  # layers in call order of the first timed forward
        self.reset()
        for name, module in find_layers(model):
            module.register_forward_pre_hook(lambda m, a, n=name: self._fwd_start(n))
            module.register_forward_hook(lambda m, a, out, n=name: self._fwd_end(n, out))

    def reset(self) -> None:
        self.fwd: dict[str, float] = defaultdict(float)
        self.bwd: dict[str, float] = defaultdict(float)
        self._starts: dict[str, float] = {}
        self._bwd_marks: list[tuple[float, str]] = []

    def _fwd_start(self, name: str) -> None:
        self._starts[name] = time.perf_counter()

    def _fwd_end(self, name: str, out) -> None:
        self.fwd[name] += time.perf_counter() - self._starts.pop(name, time.perf_counter())
        if name not in self.order:
            self.order.append(name)
        node = _grad_fn(out)
        if node is not None:
            node.register_prehook(lambda grads, n=name: self._bwd_marks.append(
                (time.perf_counter(), n)))

    def backward_done(self) -> None:
        """Call right after ``loss.backward()``: closes the last layer's interval."""
        marks = self._bwd_marks + [(time.perf_counter(), "")]
        for (t, name), (t_next, _) in zip(marks, marks[1:]):
            self.bwd[name] += t_next - t
        self._bwd_marks = []

    def step_record(self) -> dict:
        rec = {"fwd": dict(self.fwd), "bwd": dict(self.bwd)}
        self.reset()
        return rec


def _grad_fn(out):
    if isinstance(out, torch.Tensor):
        return out.grad_fn
    items = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else ()
    return next((g for g in map(_grad_fn, items) if g is not None), None)


# ----------------------------------------------------------------------------- the DAG

def layer_bytes(model: torch.nn.Module) -> dict[str, float]:
    params, owners = param_layers(model)
    out: dict[str, float] = defaultdict(float)
    for p, owner in zip(params, owners):
        out[owner] += p.numel() * p.element_size()
    return dict(out)


def chain_ops(order: list[str], nbytes: dict[str, float], overlap: bool) -> list[Op]:
    """Ops of a chain of layers (call order), in the profile's file order."""
    with_params = [n for n in order if nbytes.get(n, 0) > 0]
    ready = list(reversed(with_params))

    def op(prefix, name, kind, resource, deps, size=0.0) -> Op:
        return Op(id=f"{prefix}:{name}", name=name, layer=name, kind=kind, resource=resource,
                  deps=tuple(deps), size_bytes=float(size))

    ops = [op("down", n, COMM, DOWNLINK, [], nbytes[n]) for n in with_params]
    for k, n in enumerate(order):
        first = [] if overlap else [f"down:{m}" for m in with_params]
        deps = [f"fwd:{order[k - 1]}"] if k else first
        if overlap and n in nbytes:
            deps.insert(0, f"down:{n}")
        ops.append(op("fwd", n, COMPUTE, WORKER, deps))
    for k in reversed(range(len(order))):
        deps = [f"bwd:{order[k + 1]}"] if k + 1 < len(order) else [f"fwd:{order[-1]}"]
        ops.append(op("bwd", order[k], COMPUTE, WORKER, deps))
    ops += [op("up", n, COMM, UPLINK, [f"bwd:{n if overlap else order[0]}"], nbytes[n])
            for n in ready]
    ops += [op("upd", n, COMPUTE, PS, [f"up:{n}"]) for n in ready]
    return ops


def build_profile(job: Job, ops: list[Op], steps: list[dict], extra: dict) -> Profile:
    """``steps``: per step ``{"duration_s": {op id: s}, "comm_s": {op id: s}}`` (comm optional)."""
    index = {op.id: k for k, op in enumerate(ops)}
    durations = np.zeros((len(steps), len(ops)))
    comm = np.full((len(steps), len(ops)), np.nan)
    for s, step in enumerate(steps):
        for op_id, value in step["duration_s"].items():
            durations[s, index[op_id]] = max(0.0, value)
        for op_id, value in step.get("comm_s", {}).items():
            comm[s, index[op_id]] = max(0.0, value)
    has_comm = any("comm_s" in s for s in steps)
    profile = Profile(job=job, ops=tuple(ops), durations_s=durations,
                      comm_s=comm if has_comm else None, extra=extra)
    return validate_profile(profile, f"lab profile {job.model}")


def compute_durations(rec: dict, upd: dict[str, float]) -> dict[str, float]:
    out = {f"fwd:{n}": t for n, t in rec["fwd"].items()}
    out.update({f"bwd:{n}": t for n, t in rec["bwd"].items()})
    out.update({f"upd:{n}": t for n, t in upd.items()})
    return out


# ----------------------------------------------------------------------------- 1-process profile

def standalone_profile(spec: str, batch_size: int, overlap: bool, steps: int = 20) -> Profile:
    """What a user has before any cluster: ``lab:`` models through ``profile_lab_model``,
    ``file.py:function`` specs through ``sgdsim profile``."""
    if spec.startswith("lab:"):
        return profile_lab_model(spec, batch_size, overlap, steps=steps)
    from ...profiler import profile_model

    return profile_model(spec, batch_size, steps=steps, overlap=overlap).profile


def profile_lab_model(model: str, batch_size: int, overlap: bool, steps: int = 20,
                      lr: float = 0.1) -> Profile:
    """Compute-only profile of ``model`` in this process (one thread, no network).

    Forward and backward per layer as ``LayerTimer`` measures them, the PS update per layer as
    the in-place SGD step the parameter server does; comm ops carry the parameter bytes.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in every lab process
    try:
        work = load_workload(model, batch_size)
        timer = LayerTimer(work.model)
        rows = [_profile_step(work, timer, s, lr) for s in range(steps + 3)][3:]  # 3 warm-up
    finally:
        torch.set_num_threads(threads)
    nbytes = layer_bytes(work.model)
    job = Job(model=model, batch_size=batch_size, framework=FRAMEWORK, device=DEVICE,
              bandwidth_bps=None, overlap=overlap, source="sgdsim.lab.train.profile_lab_model")
    return build_profile(job, chain_ops(timer.order, nbytes, overlap),
                         [{"duration_s": r} for r in rows], {})


def _profile_step(work, timer: LayerTimer, step: int, lr: float) -> dict[str, float]:
    params, owners = param_layers(work.model)
    for p in params:
        p.grad = None
    loss = work.loss(step)
    loss.backward()
    timer.backward_done()
    upd: dict[str, float] = defaultdict(float)
    with torch.no_grad():
        for p, owner in zip(params, owners):
            t = time.perf_counter()
            p.add_(p.grad, alpha=-lr)
            upd[owner] += time.perf_counter() - t
    return compute_durations(timer.step_record(), upd)
