"""One training step's operators without the hardware: the model runs on PyTorch's meta device
(shapes, no data, no arithmetic) under the profiler's own layer hooks.

The hooks (``profiler.recorder``) read a clock; here the clock is virtual. The first pass
records every forward call in order; later passes replay the step with the clock advanced by
each call's (looked-up or estimated) forward time, then by its backward time, so the
recorder charges them to layers exactly as ``sgdsim profile`` charges measured time, glue code
and the loss included. A layer's backward is the sum of the backward times of its forward
calls: every backward kernel belongs to one forward call (its autograd node).

Calls autograd makes for itself (``detach``) are not the model's work and are left out.
Data-dependent branches (``if torch.all(mask == 1)``) cannot be decided without data: they
take the all-true branch (``.item()`` of a bool is True, of a number 1).
"""
from __future__ import annotations

from contextlib import contextmanager

from .template import Call, TSpec, as_template

# not work: autograd's own detach, a scalar read (answered below), a tensor's device asked
SKIP = frozenset({"aten.detach.default", "aten._local_scalar_dense.default", "prim.device.default"})
FUSED = ("scaled_dot_product_attention",)  # read whole, before they decompose on meta


def _modes():
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Dispatch(TorchDispatchMode):
        def __init__(self, tracer):
            super().__init__()
            self.tracer = tracer

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.ops.aten._local_scalar_dense.default:
                return True if args[0].dtype == torch.bool else 1
            self.tracer.seen(str(func), args, kwargs)
            return func(*args, **kwargs)

    class Function(TorchFunctionMode):
        def __init__(self, tracer):
            super().__init__()
            self.tracer = tracer

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name not in FUSED:
                return func(*args, **kwargs)
            self.tracer.seen(f"F.{name}", args, kwargs)
            with self.tracer.quiet():
                return func(*args, **kwargs)

    return Dispatch, Function


class Tracer:
    """Records forward calls (``durations is None``) or advances ``now`` by their durations."""

    def __init__(self, recorder):
        self.rec = recorder
        self.calls: list[Call] = []
        self.durations: list[float] | None = None
        self.now = 0.0
        self._next = 0
        self._quiet = 0

    def clock(self) -> float:
        return self.now

    def replay(self, durations: list[float]) -> None:
        self.durations, self.now, self._next = list(durations), 0.0, 0

    @contextmanager
    def quiet(self):
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def seen(self, func: str, args, kwargs) -> None:
        import torch

        if (self._quiet or func in SKIP or not getattr(self.rec, "in_forward", False)
                or torch._C._current_autograd_node() is not None):
            return
        if self.durations is None:
            self.calls.append(Call(func, as_template(args, TSpec.of),
                                   tuple((k, as_template(v, TSpec.of))
                                         for k, v in sorted(kwargs.items()))))
            return
        if self._next >= len(self.durations):
            raise RuntimeError("the replayed step made more calls than the traced one")
        self.now += self.durations[self._next]
        self._next += 1

    @contextmanager
    def active(self):
        dispatch, function = _modes()
        with function(self), dispatch(self):
            yield
