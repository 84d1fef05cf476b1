"""Differential timing (Tianshu §3.1): run N and M copies of a call, keep (T_N - T_M)/(N - M).

What a run costs once (the timer, the first launch, synchronising a GPU, starting the autograd
engine) is in both T_N and T_M and cancels; what every copy costs (the kernel, the framework's
dispatch, autograd's bookkeeping) stays, as it does in a training step. Each copy gets its own
input tensors, so a small operator is not timed on a hot cache it would not have in a model.

Forward copies run with autograd recording (as in a training step); backward copies are one
``torch.autograd.backward`` over N outputs, after an untimed forward.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .template import Call, TSpec, _Named

TARGET_RUN_S = 0.02  # the N-copy run should last about this long, so the difference is not noise
MAX_COPIES = 400


@dataclass(frozen=True)
class Timing:
    fwd_s: float
    bwd_s: float
    samples: int
    fwd_spread: float
    bwd_spread: float
    copies: int  # N (M = N // 2)


def resolve(func: str):
    import torch

    if func.startswith("F."):
        return getattr(torch.nn.functional, func[2:])
    _, name, overload = func.split(".")
    return getattr(getattr(torch.ops.aten, name), overload)


def materialize(obj, rng, device):
    import torch

    if isinstance(obj, tuple):
        return tuple(materialize(o, rng, device) for o in obj)
    if isinstance(obj, _Named):
        return eval(obj.text, {"torch": torch})  # noqa: S307 - only "torch.<dtype>" texts
    if isinstance(obj, TSpec):
        return _tensor(obj, rng, device)
    return obj


def _tensor(spec: TSpec, rng, device):
    import torch

    dtype = getattr(torch, spec.dtype)
    extent = 1 + sum((d - 1) * s for d, s in zip(spec.shape, spec.stride) if d > 0)
    if dtype.is_floating_point:
        base = torch.from_numpy(rng.standard_normal(extent).astype(np.float32)).to(dtype)
    else:  # indices, labels and masks: zeros (ones for masks) are valid everywhere
        base = torch.ones(extent, dtype=dtype) if dtype == torch.bool else \
            torch.zeros(extent, dtype=dtype)
    t = base.to(device).as_strided(spec.shape, spec.stride) if spec.shape else base[0].to(device)
    if spec.requires_grad and dtype.is_floating_point:
        t = t.detach().requires_grad_(True)
    return t


def _is_inplace(func: str) -> bool:
    return not func.startswith("F.") and func.split(".")[1].endswith("_")


class Runner:
    """Input sets for up to N copies of one call; ``fresh(k)`` hands out k of them, ready to run
    (untimed: in-place calls get a non-leaf copy of their target, as autograd requires)."""

    def __init__(self, call: Call, rng, device):
        self.fn = resolve(call.func)
        self.call, self.rng, self.device = call, rng, device
        self.inplace = _is_inplace(call.func)
        self.inputs: list = []

    def prepare(self, copies: int) -> None:
        while len(self.inputs) < copies:
            args = materialize(self.call.args, self.rng, self.device)
            kwargs = {k: materialize(v, self.rng, self.device) for k, v in self.call.kwargs}
            self.inputs.append((args, kwargs))

    def fresh(self, k: int) -> list:
        sets = []
        for args, kwargs in self.inputs[:k]:
            for t in _leaves(args, kwargs):
                t.grad = None
            if self.inplace and getattr(args[0], "requires_grad", False):
                args = (args[0].clone(), *args[1:])
            sets.append((args, kwargs))
        return sets

    def run(self, sets: list) -> list:
        fn, outs = self.fn, []
        for args, kwargs in sets:
            out = fn(*args, **kwargs)
            outs.append(out[0] if isinstance(out, (tuple, list)) else out)
        return outs


def _leaves(args, kwargs):
    for t in (*args, *kwargs.values()):
        if getattr(t, "requires_grad", False) and getattr(t, "is_leaf", False):
            yield t


def time_call(call: Call, rng: np.random.Generator, device: str = "cpu", repeats: int = 5,
              sync=None) -> Timing:
    """Median forward and backward seconds of one copy of ``call`` (differential, ``repeats``
    pairs of N and M = N/2 copies)."""
    sync = sync or (lambda: None)
    runner = Runner(call, rng, device)
    runner.prepare(1)
    pilot = min(_timed(runner, runner.fresh(1), sync) for _ in range(3))  # the first is cold
    n = int(min(MAX_COPIES, max(4, np.ceil(TARGET_RUN_S / max(pilot, 1e-7)))))
    n += n % 2
    runner.prepare(n)
    fwd = _differential(lambda k: _timed(runner, runner.fresh(k), sync), n, repeats)
    probe = runner.run(runner.fresh(1))[0]
    bwd = [0.0]
    if getattr(probe, "requires_grad", False):
        bwd = _differential(lambda k: _timed_backward(runner, k, sync), n, repeats)
    return Timing(fwd_s=_median(fwd), bwd_s=_median(bwd), samples=repeats,
                  fwd_spread=_spread(fwd), bwd_spread=_spread(bwd), copies=n)


def _timed(runner: Runner, sets: list, sync) -> float:
    sync()
    t0 = time.perf_counter()
    runner.run(sets)
    sync()
    return time.perf_counter() - t0


def _timed_backward(runner: Runner, k: int, sync) -> float:
    import torch

    outs = runner.run(runner.fresh(k))
    grads = [torch.ones_like(o) for o in outs]
    sync()
    t0 = time.perf_counter()
    torch.autograd.backward(outs, grads)
    sync()
    return time.perf_counter() - t0


def _differential(timed, n: int, repeats: int) -> list[float]:
    m = n // 2
    out = []
    for rep in range(repeats):
        if rep % 2 == 0:  # alternate the order, so that neither always runs on a warmer cache
            t_n, t_m = timed(n), timed(m)
        else:
            t_m, t_n = timed(m), timed(n)
        out.append((t_n - t_m) / (n - m))
    return out


def _median(values) -> float:
    return max(float(np.median(values)), 0.0)


def _spread(values) -> float:
    """Relative half-width of the middle half of the samples (0.05: +-5 %)."""
    med = float(np.median(values))
    if med <= 0:
        return 0.0
    q1, q3 = np.percentile(values, [25, 75])
    return float((q3 - q1) / 2 / med)
