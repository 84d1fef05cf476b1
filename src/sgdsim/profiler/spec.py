"""MODEL specs: ``zoo:NAME[?key=value&...]``, ``path/to/file.py:fn`` or ``package.module:fn``.

The function protocol (examples/models/custom_model.py): ``fn()`` or ``fn(batch_size=N)``
returns ``(model, (inputs, target), loss_fn)``. One step is
``loss_fn(model(inputs), target).backward()`` where a dict of inputs is passed as keyword
arguments, a tuple or list as positional arguments, anything else as the one argument.
Every problem with a spec is a one-line ``ConfigError``.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import ConfigError
from .messages import first_line
from .recorder import iter_tensors

PROTOCOL = "(model, (inputs, target), loss_fn)"


@dataclass
class Workload:
    name: str  # for job.model
    model: object
    inputs: object
    target: object
    loss_fn: object
    loss_label: str
    # "bfloat16" or "float16": the forward and the loss run under torch.autocast in that
    # precision (mixed precision, as torch.amp trains: parameters and gradients stay float32)
    autocast: str | None = None

    def forward(self) -> tuple:
        """(the model's output, the loss): the step's forward, under autocast when the
        workload asks for it."""
        mixed = None if self.autocast is None else torch.autocast(
            next(self.model.parameters()).device.type, dtype=getattr(torch, self.autocast))
        with mixed or nullcontext():
            output = call_model(self.model, self.inputs)
            return output, self.loss_fn(output, self.target)

    def to(self, device) -> "Workload":
        self.model = self.model.to(device)
        self.inputs = map_tensors(self.inputs, lambda t: t.to(device))
        self.target = map_tensors(self.target, lambda t: t.to(device))
        return self


def call_model(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def map_tensors(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_tensors(item, fn) for item in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def load_workload(spec: str, batch_size: int) -> Workload:
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"model spec must be a non-empty string (got {spec!r})")
    if spec.startswith("zoo:"):
        from .zoo import build_zoo

        name, result, where = spec[4:], build_zoo(spec[4:], batch_size), f"zoo:{spec[4:]}"
    else:
        fn, where, name = _resolve_function(spec)
        result = _call(fn, where, batch_size)
    return _check(result, where, name, batch_size)


def _resolve_function(spec: str):
    target, sep, fn_name = spec.rpartition(":")
    if not sep or not target or not fn_name:
        raise ConfigError(f"model spec {spec!r} is not zoo:NAME, FILE.py:FUNCTION or "
                          f"MODULE:FUNCTION")
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _load_file(Path(target))
        name = f"{Path(target).stem}:{fn_name}"
    else:
        module = _import_module(target)
        name = spec
    fn = getattr(module, fn_name, None)
    if fn is None:
        raise ConfigError(f"model spec {spec!r}: {target} has no function {fn_name!r}")
    if not callable(fn):
        raise ConfigError(f"model spec {spec!r}: {fn_name} is not a function")
    return fn, f"{target}:{fn_name}", name


def _load_file(path: Path):
    if not path.is_file():
        raise ConfigError(f"model file {path} does not exist")
    module_name = f"_sgdsim_model_{abs(hash(str(path.resolve())))}"
    try:
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report it in one line
        sys.modules.pop(module_name, None)
        raise ConfigError(f"cannot load model file {path}: {type(exc).__name__}: "
                          f"{first_line(exc)}") from None
    return module


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"cannot import model module {name!r} ({exc})") from None
    except Exception as exc:
        raise ConfigError(f"cannot import model module {name!r}: {type(exc).__name__}: "
                          f"{first_line(exc)}") from None


def _call(fn, where: str, batch_size: int):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    takes_batch = "batch_size" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    try:
        return fn(batch_size=batch_size) if takes_batch else fn()
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"model function {where} failed: {type(exc).__name__}: "
                          f"{first_line(exc)}") from None


def _check(result, where: str, name: str, batch_size: int) -> Workload:
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise ConfigError(f"{where} must return {PROTOCOL}, got {_describe(result)}")
    model, batch, loss_fn = result
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"{where}: the model must be a torch.nn.Module, got {_describe(model)}")
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise ConfigError(f"{where}: the example batch must be a pair (inputs, target), "
                          f"got {_describe(batch)}")
    if not callable(loss_fn):
        raise ConfigError(f"{where}: loss_fn must be callable, got {_describe(loss_fn)}")
    inputs, target = _fit_batch(batch[0], batch[1], batch_size, where)
    label = getattr(loss_fn, "__name__", None) or type(loss_fn).__name__
    return Workload(name=name, model=model, inputs=inputs, target=target, loss_fn=loss_fn,
                    loss_label=f"loss ({label})")


def _fit_batch(inputs, target, batch_size: int, where: str):
    """Repeat or cut the example batch along dim 0 to ``batch_size`` examples.

    A function that takes ``batch_size`` builds the right batch itself; for one that does not,
    every tensor whose first dimension is the example's batch size is resized.
    """
    tensors = list(iter_tensors(inputs))
    if not tensors:
        raise ConfigError(f"{where}: the example inputs contain no tensor")
    if tensors[0].dim() == 0 or tensors[0].shape[0] == batch_size:
        return inputs, target
    b0 = tensors[0].shape[0]
    if b0 == 0:
        raise ConfigError(f"{where}: the example batch is empty")
    index = torch.arange(batch_size, device=tensors[0].device) % b0

    def fit(t):
        return t[index.to(t.device)] if t.dim() and t.shape[0] == b0 else t

    return map_tensors(inputs, fit), map_tensors(target, fit)


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__
