"""Import a one-GPU (or CPU) torch.profiler / Kineto Chrome trace of training steps as a profile.

The trace has no layer graph, so layers come from annotations: ``record_function`` ranges
named ``layer: NAME[ | LABEL]`` (examples/kineto/record_trace.py), else the ``nn.Module: Cls_k``
events that ``with_stack=True`` records (the leaf modules of the first top-level module call of
each step). Every top-level op of the forward pass goes to the layer it runs in, glue between
layers to the next layer, ops after the last layer to ``loss`` (the rules of ``sgdsim
profile``). A backward node belongs to the layer whose forward op has its ``Sequence number``;
nodes without one (AccumulateGrad) belong to the layer whose backward ran last. A layer's time
is the sum of its ops (CPU trace) or of the device kernels they launched (GPU trace). The ops
and deps are those of ``sgdsim profile``; rules and limits: docs/profile-format.md.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..errors import ConfigError
from .kineto_trace import (EPS_US, GPU_SIDE, _containing, _Ev, _fail, _read_trace, _time_us,
                           _Trace)
from .model import Job, Profile

FRAMEWORK = "pytorch (torch.profiler trace)"
LAYER_PREFIX = "layer: "
LOSS_PREFIX = "loss: "
MODULE_PREFIX = "nn.Module: "
BWD_PREFIX = "autograd::engine::evaluate_function: "
ACCUMULATE = "torch::autograd::AccumulateGrad"
MAX_PARAM_ELEMENTS = 10**15  # of one parameter tensor (the profiles refuse sizes above 1e15 B)
# record_shapes' "Input type" strings (c10 scalar type names) -> bytes per element
ELEMENT_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8,
                 "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
                 "c10::complex<float>": 8, "c10::complex<double>": 16,
                 "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}


@dataclass
class _Layer:
    name: str
    label: str
    ts: float
    end: float
    thread: tuple


@dataclass
class _Step:
    """What one step attributes to each layer (index into the step's layers)."""

    names: list[str]
    labels: list[str]
    fwd_us: list[float]
    bwd_us: list[float]
    param_bytes: list[int]
    ready_us: list[float]  # end of the layer's last backward work, from the backward's start
    update_us: float = 0.0


def import_kineto(trace_path, batch_size: int, overlap: bool = True,
                  model_name: str | None = None) -> Profile:
    """Read a torch.profiler Chrome trace (.json or .json.gz) of training steps."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ConfigError(f"batch size must be a positive integer, got {batch_size!r}")
    path = Path(trace_path)
    trace = _read_trace(path)
    steps = [_analyse_step(trace, window, k) for k, window in enumerate(_step_windows(trace))]
    return _build(trace, steps, batch_size, overlap, model_name or _model_name(path))


def _model_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".pt.trace", ".trace"):
        name = name.removesuffix(suffix)
    return name or "model"


# ----------------------------------------------------------------------------- steps

def _step_windows(trace: _Trace) -> list[tuple[float, float]]:
    """ProfilerStep#N ranges (torch.profiler's schedule); else one step per optimizer step."""
    host = [e for e in trace.events if e.cat not in GPU_SIDE]
    marks = [(e.ts, e.end) for e in host if e.name.startswith("ProfilerStep#")]
    if marks:
        return marks
    ends = [e.end for e in host if e.name.startswith("Optimizer.step#")]
    if not ends:
        return [(-math.inf, math.inf)]
    starts = [-math.inf] + ends[:-1]
    return [(a + EPS_US, b) for a, b in zip(starts, ends)]


def _layers(trace: _Trace, t0: float, t1: float):
    """Layer ranges of one step in call order, the loss label, the annotated thread and when
    the forward pass starts (the first layer, or the model's module call)."""
    inside = [e for e in trace.events if t0 <= e.ts <= t1 and e.cat not in GPU_SIDE]
    ranges = [e for e in inside if e.name.startswith(LAYER_PREFIX) and e.cat != "cpu_op"]
    if ranges:
        layers = _outermost(ranges)
        found = [_Layer(*_split_label(e.name[len(LAYER_PREFIX):]), e.ts, e.end, e.thread)
                 for e in layers]
        if any(not x.name for x in found):
            _fail(trace.path, f"a range named {LAYER_PREFIX.strip()!r} has no layer name")
        loss = next((e.name[len(LOSS_PREFIX):] for e in inside if e.name.startswith(LOSS_PREFIX)),
                    "loss")
        return found, loss, layers[0].thread, layers[0].ts
    modules = [e for e in inside if e.name.startswith(MODULE_PREFIX)]
    if not modules:
        return [], "", None, 0.0
    top = _outermost(modules)
    model = top[0]  # the first module called in a step is the model; later ones (loss) are not
    inner = [m for m in modules if m.thread == model.thread and model.ts <= m.ts <= model.end]
    # Sorted parents first, so a module's first child (if any) is the next module event.
    leaves = [m for m, nxt in zip(inner, inner[1:] + [None])
              if nxt is None or nxt.ts >= m.end - EPS_US]
    found = [_Layer(e.name[len(MODULE_PREFIX):], e.name[len(MODULE_PREFIX):].rsplit("_", 1)[0],
                    e.ts, e.end, e.thread) for e in leaves]
    after = [e for e in top[1:] if e.ts >= model.end]
    loss = f"loss ({after[0].name[len(MODULE_PREFIX):].rsplit('_', 1)[0]})" if after else "loss"
    return found, loss, model.thread, model.ts


def _split_label(text: str) -> tuple[str, str]:
    name, _, label = text.partition(" | ")
    return name.strip(), (label.strip() or name.strip())


def _outermost(events: list[_Ev]) -> list[_Ev]:
    kept: list[_Ev] = []
    for e in events:  # sorted by start, parents first
        if not kept or e.ts >= kept[-1].end - EPS_US:
            kept.append(e)
    return kept


def _unique_names(layers: list[_Layer]) -> list[str]:
    """A layer called k times gives NAME, NAME#2, ... (sgdsim profile's names)."""
    calls: dict[str, int] = {}
    names = []
    for layer in layers:
        calls[layer.name] = calls.get(layer.name, 0) + 1
        names.append(layer.name if calls[layer.name] == 1 else f"{layer.name}#{calls[layer.name]}")
    loss = "loss" if "loss" not in names else "loss#fn"
    return names + [loss]


# ----------------------------------------------------------------------------- one step

def _analyse_step(trace: _Trace, window: tuple[float, float], k: int) -> _Step:
    t0, t1 = window
    layers, loss_label, main, fwd_start = _layers(trace, t0, t1)
    if not layers:
        _fail(trace.path, f"step {k}: no layer annotations (record with with_stack=True for "
                          f"nn.Module events, or name record_function ranges 'layer: NAME' as "
                          f"examples/kineto/record_trace.py does)")
    bwd_units = sorted((op for ops in trace.by_thread.values() for op in ops
                        if op.name.startswith(BWD_PREFIX) and t0 <= op.ts <= t1),
                       key=lambda e: e.ts)
    if not bwd_units:
        _fail(trace.path, f"step {k}: no backward pass (no '{BWD_PREFIX.strip()}' events); "
                          f"profile training steps, with loss.backward()")
    layers = _forward_layers(trace, layers, bwd_units[0].ts, k)
    n = len(layers)  # the loss pseudo-layer is index n
    step = _Step(names=_unique_names(layers), labels=[x.label for x in layers] + [loss_label],
                 fwd_us=[0.0] * (n + 1), bwd_us=[0.0] * (n + 1), param_bytes=[0] * (n + 1),
                 ready_us=[-math.inf] * (n + 1))
    owner = _forward(trace, step, layers, main, (fwd_start, bwd_units[0].ts))
    assigned = _backward(trace, step, bwd_units, owner, n)
    _parameters(trace, step, assigned, (t0, t1), k)
    step.update_us = _optimizer_us(trace, main, t0, t1)
    return step


def _forward_layers(trace: _Trace, layers: list[_Layer], bwd_start: float, k: int):
    """Drop layer calls made inside the backward (activation checkpointing recomputes them:
    that is backward work); a layer called after the backward began, outside it, means the
    step holds more than one iteration."""
    kept = []
    for layer in layers:
        if layer.ts < bwd_start:
            kept.append(layer)
            continue
        unit = _containing(trace, layer.thread, layer.ts)
        if unit is None or not unit.name.startswith(BWD_PREFIX):
            _fail(trace.path, f"step {k}: layer {layer.name!r} runs after the backward pass "
                              f"began: several iterations in one step (mark steps with "
                              f"torch.profiler's schedule and prof.step())")
    return kept


def _forward(trace: _Trace, step: _Step, layers: list[_Layer], main, span) -> dict:
    """Charge top-level forward ops to layers; returns sequence number -> layer."""
    starts = [x.ts for x in layers]
    n = len(layers)
    unit_layer: dict[int, int] = {}
    for op in trace.by_thread.get(main, []):
        if not span[0] - EPS_US <= op.ts < span[1]:
            continue
        i = bisect.bisect_right(starts, op.ts + EPS_US) - 1
        if i < 0 or op.ts > layers[i].end + EPS_US:
            i += 1  # glue between layers feeds the next layer; after the last: the loss
        unit_layer[id(op)] = i
        step.fwd_us[i] += _time_us(trace, op)[0]
    owner: dict = {}
    for e in trace.events:  # nested ops too: the op that creates a node may be an inner one
        seq = e.args.get("Sequence number")
        if e.cat != "cpu_op" or seq is None or e.thread != main or not span[0] <= e.ts < span[1]:
            continue
        unit = _containing(trace, main, e.ts)
        if unit is not None and id(unit) in unit_layer:
            owner[seq] = unit_layer[id(unit)]  # later op wins: it consumed the number
    return owner if n else {}


def _backward(trace: _Trace, step: _Step, units: list[_Ev], owner: dict, n: int) -> dict:
    """Charge backward nodes to layers; returns id(node) -> layer."""
    current, assigned = n, {}  # before any layer's node runs: the loss's backward
    start = units[0].ts
    for unit in units:
        current = owner.get(unit.args.get("Sequence number"), current)
        busy, end = _time_us(trace, unit)
        step.bwd_us[current] += busy
        step.ready_us[current] = max(step.ready_us[current], end - start)
        assigned[id(unit)] = current
    return assigned


def _parameters(trace: _Trace, step: _Step, assigned: dict, window, k: int) -> None:
    """Parameter bytes per layer from the shapes of the AccumulateGrad calls it runs."""
    found = False
    for e in trace.events:
        if e.name != ACCUMULATE or e.cat != "cpu_op" or not window[0] <= e.ts <= window[1]:
            continue
        found = True
        dims, types = e.args.get("Input Dims"), e.args.get("Input type")
        if not (isinstance(dims, list) and dims and isinstance(dims[0], list) and types):
            _fail(trace.path, "no input shapes on AccumulateGrad: record with "
                              "record_shapes=True (parameter sizes come from them)")
        if not all(type(d) is int and 0 <= d <= MAX_PARAM_ELEMENTS for d in dims[0]) or \
                math.prod(dims[0]) > MAX_PARAM_ELEMENTS:  # a product of 400 digits: float overflows
            _fail(trace.path, f"AccumulateGrad shape {str(dims[0])[:60]} is not a list of sizes "
                              f"of at most {MAX_PARAM_ELEMENTS:g} elements")
        if not isinstance(types, list) or not isinstance(types[0], str) or \
                types[0] not in ELEMENT_BYTES:
            _fail(trace.path, f"unknown parameter element type {types!r}")
        unit = _containing(trace, e.thread, e.ts)
        layer = assigned.get(id(unit)) if unit is not None else None
        if layer is not None:
            step.param_bytes[layer] += math.prod(dims[0]) * ELEMENT_BYTES[types[0]]
    if not found:
        _fail(trace.path, f"step {k}: no AccumulateGrad events: no parameter got a gradient")


def _optimizer_us(trace: _Trace, main, t0: float, t1: float) -> float:
    """Time of the ops inside the step's ``Optimizer.step#...`` ranges (0 without them)."""
    total = 0.0
    for r in trace.events:
        if r.name.startswith("Optimizer.step#") and r.thread == main and t0 <= r.ts <= t1:
            total += sum(_time_us(trace, op)[0] for op in trace.by_thread.get(main, [])
                         if r.ts - EPS_US <= op.ts and op.end <= r.end + EPS_US)
    return total


# ----------------------------------------------------------------------------- profile

def _build(trace: _Trace, steps: list[_Step], batch_size: int, overlap: bool,
           model: str) -> Profile:
    from ..profiler.build import build_profile  # torch-free: the ops of sgdsim profile

    first = steps[0]
    for k, s in enumerate(steps[1:], start=1):
        if s.names != first.names:
            _fail(trace.path, f"step {k} calls other layers than step 0 "
                              f"({len(s.names) - 1} vs {len(first.names) - 1})")
        if s.param_bytes != first.param_bytes:
            _fail(trace.path, f"step {k}: parameter sizes per layer differ from step 0")
    n = len(first.names)
    total = sum(first.param_bytes)
    ready = np.array([s.ready_us for s in steps]).mean(axis=0)
    # Uplinks in gradient-ready order; ties (no backward work) by reverse call order.
    order = sorted((i for i in range(n) if first.param_bytes[i] > 0),
                   key=lambda i: (ready[i], -i))
    us = 1e-6
    fwd = np.array([s.fwd_us for s in steps]) * us
    bwd = np.array([s.bwd_us for s in steps]) * us
    share = np.array(first.param_bytes, dtype=float) / total if total else np.zeros(n)
    upd = np.array([[s.update_us * us * f for f in share] for s in steps])
    measured = SimpleNamespace(
        names=first.names, labels=first.labels, param_bytes=first.param_bytes,
        deps=[() if i == 0 else (i - 1,) for i in range(n)],  # no tensor ids: a chain
        ready_order=order, fwd=np.round(fwd, 12), bwd=np.round(bwd, 12), upd=np.round(upd, 12))
    job = Job(model=model, batch_size=batch_size, framework=FRAMEWORK, device=trace.device,
              overlap=overlap, source=trace.path.name)
    extra = {"kineto": {
        "trace": trace.path.name, "steps": len(steps), "layers": n,
        "time": "device kernels" if trace.on_gpu else "cpu ops",
        "parameter_bytes": int(total),
        "grad_ready_order": [first.names[i] for i in order],
        "grad_ready_s": {first.names[i]: round(float(ready[i]) * us, 12) for i in order},
        "optimizer_step_s": [round(s.update_us * us, 12) for s in steps]}}
    return build_profile(measured, job, overlap, extra)
