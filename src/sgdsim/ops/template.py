"""A replayable operator call: the aten function and its arguments, tensors replaced by specs.

A traced call (``trace.py``, on the meta device) and a call built from an operator type's
parameters (``optypes``) are the same object, so the timer (``measure.py``) replays both the
same way: fresh random tensors of the recorded shapes, strides and dtypes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


FLOATING = ("float32", "float16", "bfloat16", "float64")


@dataclass(frozen=True)
class TSpec:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # torch dtype name without "torch.": "float32", "int64", "bool"
    requires_grad: bool = False

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @classmethod
    def of(cls, t, requires_grad: bool | None = None) -> "TSpec":
        rg = t.requires_grad if requires_grad is None else requires_grad
        return cls(tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."), rg)

    @classmethod
    def dense(cls, shape, dtype="float32", requires_grad=False) -> "TSpec":
        stride, s = [], 1
        for d in reversed(shape):
            stride.append(s)
            s *= max(d, 1)
        return cls(tuple(shape), tuple(reversed(stride)), dtype, requires_grad)


@dataclass(frozen=True)
class Call:
    """``func``: "aten.convolution.default" or "F.scaled_dot_product_attention"."""

    func: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def tensors(self) -> list[TSpec]:
        return [a for a in _leaves(self.args) if isinstance(a, TSpec)] + \
               [v for _, v in self.kwargs if isinstance(v, TSpec)]

    @property
    def needs_grad(self) -> bool:
        return any(t.requires_grad for t in self.tensors())

    @property
    def inplace(self) -> bool:
        """An aten call that writes into its first argument ("aten.add_.Tensor")."""
        return not self.func.startswith("F.") and self.func.split(".")[1].endswith("_")

    def in_dtype(self, dtype: str) -> "Call":
        """The same call with its floating-point tensors (and dtype arguments) in ``dtype``: a
        step traced in float32, replayed or estimated as it would run in bfloat16."""
        def convert(obj):
            if isinstance(obj, tuple):
                return tuple(convert(o) for o in obj)
            if isinstance(obj, TSpec) and obj.dtype in FLOATING:
                return TSpec(obj.shape, obj.stride, dtype, obj.requires_grad)
            if isinstance(obj, _Named) and obj.text.removeprefix("torch.") in FLOATING:
                return _Named(f"torch.{dtype}")
            return obj
        return Call(self.func, convert(self.args), tuple((k, convert(v)) for k, v in self.kwargs))


def _leaves(obj):
    if isinstance(obj, (tuple, list)):
        for item in obj:
            yield from _leaves(item)
    else:
        yield obj


def as_template(obj, spec):
    """``obj`` (a nested call argument) with every tensor replaced by ``spec(tensor)``."""
    if isinstance(obj, (tuple, list)):
        return tuple(as_template(o, spec) for o in obj)
    if _is_tensor(obj):
        return spec(obj)
    if type(obj).__name__ in ("dtype", "device", "layout", "memory_format"):
        return _Named(str(obj))
    return obj


@dataclass(frozen=True)
class _Named:
    """A torch dtype/device/layout argument, kept as text (``torch.float32``)."""

    text: str


def _is_tensor(obj) -> bool:
    return type(obj).__name__ in ("Tensor", "Parameter", "FakeTensor") or \
        hasattr(obj, "__torch_function__") and hasattr(obj, "shape") and hasattr(obj, "stride")
