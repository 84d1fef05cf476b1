"""Models for lab training: built-in synthetic workloads and ``path/file.py:fn`` specs.

The lab runs on a small machine whose cores are shared by every emulated host, so the built-in
models are *network-bound*: many parameters, little compute (wide Linear layers at a small
batch). ``lab:mlp-<N>mb`` is an MLP of about N MB (1e6 bytes) of fp32 parameters; its data is a
seeded synthetic classification task that a teacher matrix labels, so the loss can go down.

A built-in builder returns ``(model, batch_fn, loss_fn)`` with ``batch_fn(step) -> (inputs,
target)``; a custom function follows ``examples/models/custom_model.py`` (``fn(batch_size=...)``
or ``fn()`` returning ``(model, example_batch, loss_fn)``), its one batch reused every step.
Both become a ``Workload``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from ...errors import ConfigError
from ...placement import least_loaded
from ...profiler.recorder import find_layers  # noqa: F401  (the lab's layers are the profiler's)
from ...profiler.spec import call_model  # noqa: F401

INPUT_FEATURES = 1024
CLASSES = 10
_MLP_RE = re.compile(r"^lab:mlp-(\d+)mb$")
_CNN_RE = re.compile(r"^lab:(wide)?cnn-(\d+)mb$")
CNN_CHANNELS = {"": (32, 64, 128), "wide": (64, 128, 256)}


@dataclass
class Workload:
    name: str
    model: nn.Module
    batch_fn: Callable[[int], tuple]  # step -> (inputs, target)
    loss_fn: Callable
    batch_size: int

    def loss(self, step: int):
        inputs, target = self.batch_fn(step)
        return self.loss_fn(call_model(self.model, inputs), target)




# ----------------------------------------------------------------------------- built-ins

def _mlp_width(target_bytes: float, depth: int) -> int:
    # params ~= in*h + (depth-2)*h^2 + classes*h: solve for h, round to a multiple of 64
    a, b = depth - 2, INPUT_FEATURES + CLASSES + depth
    n = target_bytes / 4
    h = (-b + math.sqrt(b * b + 4 * a * n)) / (2 * a)
    return max(64, int(round(h / 64)) * 64)


def mlp(size_mb: float, depth: int = 4):
    """Builder of an MLP with ``depth`` Linear layers and about ``size_mb`` MB of parameters."""
    width = _mlp_width(size_mb * 1e6, depth)

    def build(batch_size: int, seed: int = 0):
        torch.manual_seed(seed)
        layers: OrderedDict = OrderedDict()
        dims = [INPUT_FEATURES] + [width] * (depth - 1)
        for k, (i, o) in enumerate(zip(dims, dims[1:]), start=1):
            layers[f"fc{k}"] = nn.Linear(i, o)
            layers[f"relu{k}"] = nn.ReLU()
        layers[f"fc{depth}"] = nn.Linear(width, CLASSES)
        return nn.Sequential(layers), _teacher_batches(batch_size, (INPUT_FEATURES,), seed), \
            F.cross_entropy

    build.__doc__ = f"MLP {INPUT_FEATURES}-{width}x{depth - 1}-{CLASSES}, ~{size_mb:g} MB fp32"
    return build


def cnn_small(batch_size: int, seed: int = 0):
    """Three convolutions and two Linear layers on 32x32 images: ~5 MB, more compute per byte."""
    torch.manual_seed(seed)
    layers: OrderedDict = OrderedDict()
    for k, (i, o) in enumerate(((3, 32), (32, 64), (64, 128)), start=1):
        layers[f"conv{k}"] = nn.Conv2d(i, o, 3, padding=1)
        layers[f"relu{k}"] = nn.ReLU()
        layers[f"pool{k}"] = nn.MaxPool2d(2)
    layers.update(flat=nn.Flatten(), fc1=nn.Linear(128 * 16, 512), relu4=nn.ReLU(),
                  fc2=nn.Linear(512, CLASSES))
    return nn.Sequential(layers), _teacher_batches(batch_size, (3, 32, 32), seed), F.cross_entropy


def cnn(size_mb: float, channels: tuple[int, int, int]):
    """Builder of a CNN on 32x32 images: three 3x3 convolutions (``channels``), each pooled,
    then two Linear layers of a width that brings the parameters to about ``size_mb`` MB.
    Wider channels: more compute per byte sent."""
    c1, c2, c3 = channels
    conv_params = 3 * c1 * 9 + c1 + c1 * c2 * 9 + c2 + c2 * c3 * 9 + c3
    feats = c3 * 16
    # feats*h + h + h*CLASSES + CLASSES = rest: solve for h
    rest = max(size_mb * 1e6 / 4 - conv_params - CLASSES, 0.0)
    width = max(16, int(round(rest / (feats + 1 + CLASSES))))

    def build(batch_size: int, seed: int = 0):
        torch.manual_seed(seed)
        layers: OrderedDict = OrderedDict()
        for k, (i, o) in enumerate(((3, c1), (c1, c2), (c2, c3)), start=1):
            layers[f"conv{k}"] = nn.Conv2d(i, o, 3, padding=1)
            layers[f"relu{k}"] = nn.ReLU()
            layers[f"pool{k}"] = nn.MaxPool2d(2)
        layers.update(flat=nn.Flatten(), fc1=nn.Linear(feats, width), relu4=nn.ReLU(),
                      fc2=nn.Linear(width, CLASSES))
        return nn.Sequential(layers), _teacher_batches(batch_size, (3, 32, 32), seed), F.cross_entropy

    build.__doc__ = f"CNN {c1}-{c2}-{c3} channels, fc {feats}-{width}-{CLASSES}, ~{size_mb:g} MB fp32"
    return build


def _teacher_batches(batch_size: int, shape: tuple, seed: int):
    """Seeded random inputs labelled by a fixed random linear teacher: learnable, no files.

    The teacher is the same for every seed (all workers learn one task); ``seed`` picks the
    inputs, so workers seeded apart see different data.
    """
    teacher = torch.randn(math.prod(shape), CLASSES, generator=torch.Generator().manual_seed(7))
    gen = torch.Generator().manual_seed(1000 + seed)
    pool = []
    for _ in range(8):  # a small pool, so data generation costs no CPU during the run
        x = torch.randn(batch_size, *shape, generator=gen)
        pool.append((x, (x.flatten(1) @ teacher).argmax(1)))
    return lambda step: pool[step % len(pool)]


LAB_MODELS: dict[str, Callable] = {
    "lab:mlp-10mb": mlp(10), "lab:mlp-20mb": mlp(20), "lab:mlp-40mb": mlp(40),
    "lab:cnn-small": cnn_small,
}


# ----------------------------------------------------------------------------- resolving specs

def check_spec(spec: str) -> None:
    """Fail in one line on a spec that names no model (a custom file is imported, not run)."""
    if spec.startswith("lab:"):
        _builtin(spec)
        return
    target, sep, fn_name = spec.rpartition(":")
    if not sep or not target or not fn_name:
        raise ConfigError(f"model {spec!r}: use a built-in ({', '.join(LAB_MODELS)}, "
                          f"lab:mlp-<N>mb) or path/file.py:function")
    if target.endswith(".py") and not Path(target).is_file():
        raise ConfigError(f"model {spec!r}: no such file {target}")
    _resolve_function(spec)  # a missing function fails now, not in W+1 lab processes


def _builtin(spec: str) -> Callable:
    if spec in LAB_MODELS:
        return LAB_MODELS[spec]
    m = _MLP_RE.match(spec)
    if m and 1 <= int(m.group(1)) <= 400:
        return mlp(int(m.group(1)))
    m = _CNN_RE.match(spec)
    if m and 2 <= int(m.group(2)) <= 400:
        return cnn(int(m.group(2)), CNN_CHANNELS[m.group(1) or ""])
    raise ConfigError(f"unknown lab model {spec!r} (built-ins: {', '.join(LAB_MODELS)}, "
                      f"lab:mlp-<N>mb with N in 1..400, lab:cnn-<N>mb and lab:widecnn-<N>mb "
                      f"with N in 2..400)")


def load_workload(spec: str, batch_size: int, seed: int = 0) -> Workload:
    check_spec(spec)
    if spec.startswith("lab:"):
        model, batch_fn, loss_fn = _builtin(spec)(batch_size, seed)
        return Workload(spec, model, batch_fn, loss_fn, batch_size)
    torch.manual_seed(seed)
    fn = _resolve_function(spec)
    try:
        takes_batch = "batch_size" in inspect.signature(fn).parameters
        result = fn(batch_size=batch_size) if takes_batch else fn()
    except Exception as exc:  # the user's code: any failure is a one-line config error
        raise ConfigError(f"model function {spec} failed: {type(exc).__name__}: {exc}") from None
    if not (isinstance(result, (tuple, list)) and len(result) == 3):
        raise ConfigError(f"model function {spec} must return (model, example_batch, loss_fn)")
    model, batch, loss_fn = result
    if not isinstance(model, nn.Module) or not (isinstance(batch, (tuple, list))
                                                 and len(batch) == 2):
        raise ConfigError(f"model function {spec} must return "
                          f"(nn.Module, (inputs, target), loss_fn)")
    batch = _fit_batch(batch, batch_size)
    return Workload(spec, model, lambda step: batch, loss_fn, batch_size)


def _resolve_function(spec: str):
    target, _, fn_name = spec.rpartition(":")
    try:
        if target.endswith(".py"):
            path = Path(target).resolve()
            name = f"_sgdsim_lab_model_{abs(hash(str(path)))}"
            loader = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module  # dataclasses look their module up by name
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except Exception as exc:
        raise ConfigError(f"cannot load model {spec}: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ConfigError(f"model {spec}: {target} has no function {fn_name!r}")
    return fn


def _fit_batch(batch, batch_size: int):
    """Repeat or cut every tensor whose first dimension is the example's batch size."""
    inputs, target = batch
    first = [t for t in _tensors(inputs) if t.dim() > 0]
    if not first or first[0].shape[0] == batch_size:
        return inputs, target
    n = first[0].shape[0]

    def fit(t):
        if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.shape[0] != n:
            return t
        reps = -(-batch_size // n)
        return t.repeat(reps, *([1] * (t.dim() - 1)))[:batch_size]

    return _map(inputs, fit), _map(target, fit)


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (tuple, list)) else []
    return [t for item in items for t in _tensors(item)]


def _map(obj, fn):
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map(v, fn) for v in obj)
    return fn(obj)


# ----------------------------------------------------------------------------- layers



def param_layers(model: nn.Module) -> tuple[list[torch.Tensor], list[str]]:
    """Every parameter in layer order, and the name of the layer that owns it.

    This order is the wire order: the PS sends, and expects, tensors by this index.
    """
    params, owners, seen = [], [], set()
    for name, module in find_layers(model):
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
                owners.append(name)
    return params, owners


def shard_of(params, owners: list[str], shards: int) -> list[int]:
    """The parameter server of every tensor: whole layers, least-loaded by bytes, in layer
    order, as the simulator places them (``placement.least_loaded``)."""
    layer_bytes: dict[str, float] = {}
    for p, layer in zip(params, owners):
        layer_bytes[layer] = layer_bytes.get(layer, 0.0) + p.numel() * p.element_size()
    owner = least_loaded(layer_bytes, shards)
    return [owner[layer] for layer in owners]
