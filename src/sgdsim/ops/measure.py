"""Differential timing (Tianshu §3.1): run N and M copies of a call, keep (T_N - T_M)/(N - M).

What a run costs once (the timer, the first launch, synchronising a GPU, starting the autograd
engine) is in both T_N and T_M and cancels; what every copy costs (the kernel, the framework's
dispatch, autograd's bookkeeping) stays, as it does in a training step. Each copy gets its own
autograd leaf over shared data (see ``Runner``).

Forward copies run with autograd recording (as in a training step); backward copies are one
``torch.autograd.grad`` over N outputs, after an untimed forward.

``time_call(naive_above_s=...)`` is the hybrid of docs/ops.md's Table 2 (a call that long timed
alone): with glibc's thresholds raised to 32 MiB (this module's allocator until run 10) it
summed models' steps worse than the plain differential on this CPU (10.5 % against 5.9 %), so
it is off by default and kept for that comparison.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .template import Call, TSpec, _Named

TARGET_RUN_S = 0.01  # the N-copy run should last about this long, so the difference is not noise
MAX_COPIES = 400
MAX_LIVE_BYTES = 512 * 2 ** 20  # inputs and outputs of the copies alive at once


@dataclass(frozen=True)
class Timing:
    fwd_s: float
    bwd_s: float
    samples: int
    fwd_spread: float
    bwd_spread: float
    copies: int  # N of the forward (M = N // 2)
    fwd_bound: bool = False  # below what the timer resolves: fwd_s is an upper bound
    bwd_bound: bool = False
    fwd_ref_s: float = 0.0  # the reference's median during the forward samples (0: none)
    bwd_ref_s: float = 0.0


@dataclass(frozen=True)
class Precision:
    """Repeat pairs beyond ``repeats`` until the median's relative standard error is at most
    ``rel``, ``max_repeats`` pairs ran, or a direction has run ``max_s`` seconds (None:
    exactly ``repeats``)."""

    rel: float | None = None
    max_repeats: int = 0
    max_s: float = float("inf")


# how ops measure times by default (and ops retest times again): at least 5 pairs, then more
# until the median is known to 5 %, at most 20, and none started after a direction's first
# second: a long call's 5 pairs take longer than that, and on a machine whose drift is 10-20 %
# between runs minutes apart (docs/ops-runs.md), its 15th pair does not make it more repeatable
DEFAULT_REPEATS = 5
DEFAULT_PRECISION = Precision(0.05, 20, 1.0)


def keep_memory() -> bool:
    """Time every call with glibc keeping what it frees (``profiler/memory.py``), as a caching
    allocator serves a step: PyTorch's on a GPU, jemalloc, tcmalloc, ``sgdsim profile
    --keep-memory``. With glibc's own thresholds (at most 32 MiB), whether a larger tensor
    faults its pages in depended on what the process had freed before: a vocabulary table's
    gradient ran at 0.17 ns an element in one grid row and at 1.0-1.8 in the next, so rows
    disagreed with each other and with any step (docs/ops-runs.md, run 10). Returns False where
    there is no glibc (that allocator is then timed as it is)."""
    from ..errors import ConfigError
    from ..profiler.memory import keep_freed_memory

    try:
        keep_freed_memory()
    except ConfigError:
        return False
    return True


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
    if isinstance(obj, _Named):  # dtypes and layouts ("torch.float32"); devices: ours
        return getattr(torch, obj.text[6:]) if obj.text.startswith("torch.") else device
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


class Runner:
    """One set of input data for a call; ``fresh(k)`` hands out k copies of it, ready to run.

    The copies share the data (an operator in a model reads what the previous one just wrote:
    a warm cache) but are distinct autograd leaves, so that the backward of k copies does not
    add k gradients into one tensor, work a model's step does not do. An in-place call gets a
    clone of its target, as autograd requires (made here, untimed).
    """

    def __init__(self, call: Call, rng, device, keep_outputs: bool = False):
        self.fn = resolve(call.func)
        self.keep_outputs = keep_outputs
        self.inplace = call.inplace
        self.args = materialize(call.args, rng, device)
        self.kwargs = {k: materialize(v, rng, device) for k, v in call.kwargs}
        # a copy's output and its gradient are about the size of its largest tensor, twice
        self.bytes_per_copy = 2 * max((t.numel * 4 for t in call.tensors()), default=4)

    def fresh(self, k: int) -> list:
        sets = []
        for _ in range(k):
            leaves: list = []
            args = tuple(_leaf(a, leaves) for a in self.args)
            kwargs = {name: _leaf(v, leaves) for name, v in self.kwargs.items()}
            if self.inplace and getattr(args[0], "requires_grad", False):
                args = (args[0].clone(), *args[1:])
            sets.append((args, kwargs, leaves))
        return sets

    def forward(self, sets: list) -> list:
        """Runs every copy. By default each output is dropped at once, so the allocator hands
        the next copy the block just written, warm in the caches. With ``keep_outputs`` they
        are returned alive, each written to memory of its own, as a step's autograd keeps
        activations for the backward (the caller frees them once the clock has stopped)."""
        fn = self.fn
        if self.keep_outputs:
            return [fn(*args, **kwargs) for args, kwargs, _ in sets]
        for args, kwargs, _ in sets:
            fn(*args, **kwargs)
        return []

    def outputs(self, sets: list) -> list:
        outs = []
        for args, kwargs, _ in sets:
            out = self.fn(*args, **kwargs)
            outs.append(out[0] if isinstance(out, (tuple, list)) else out)
        return outs


def _leaf(obj, leaves: list):
    if isinstance(obj, (tuple, list)):  # Tensor[] arguments (cat, stack...)
        return type(obj)(_leaf(o, leaves) for o in obj)
    if not getattr(obj, "requires_grad", False):
        return obj
    t = obj.detach().requires_grad_(True)
    leaves.append(t)
    return t


def time_call(call: Call, rng: np.random.Generator, device: str = "cpu", repeats: int = 5,
              sync=None, naive_above_s: float = float("inf"), precision: Precision = Precision(),
              reference=None, keep_outputs: bool = False, backward: bool = True) -> Timing:
    """Median forward and backward seconds of one copy of ``call``: differential (``repeats``
    pairs of N and M = N/2 copies, more until ``precision``), or, for a direction whose single
    call lasts ``naive_above_s``, one call at a time (the hybrid; off by default). ``copies``
    is the forward's N (1: timed alone). A median the timer cannot tell from 0 is replaced by
    an upper bound and flagged: nothing <= 0 is ever returned for a direction that ran.
    ``reference`` (``reference.Reference``): timed once after each differential pair, its
    median kept per direction: how fast the machine ran meanwhile. ``keep_outputs``: each forward
    copy's output kept alive until the run ends (``Runner.forward``); not the default, compared
    in docs/ops-runs.md (run 52). ``backward=False`` times the forward only."""
    sync = sync or (lambda: None)
    runner = Runner(call, rng, device, keep_outputs)
    timed_fwd = lambda k: _timed(runner, k, sync)  # noqa: E731
    fwd, n_fwd = _direction(timed_fwd, runner, repeats, naive_above_s, precision, reference)
    bwd = Samples([0.0], [0.0])
    if backward and getattr(runner.outputs(runner.fresh(1))[0], "requires_grad", False):
        timed_bwd = lambda k: _timed_backward(runner, k, sync)  # noqa: E731
        bwd, _ = _direction(timed_bwd, runner, repeats, naive_above_s, precision, reference)
    (f, f_bound), (b, b_bound) = fwd.value(), bwd.value()
    return Timing(fwd_s=f, bwd_s=b, samples=len(fwd.per_copy), fwd_spread=_spread(fwd.per_copy),
                  bwd_spread=_spread(bwd.per_copy), copies=n_fwd, fwd_bound=f_bound, bwd_bound=b_bound,
                  fwd_ref_s=fwd.reference(), bwd_ref_s=bwd.reference())


@dataclass
class Samples:
    """One direction's per-copy samples, and for each the M-copy run over M (an upper bound
    on one copy: the run's fixed costs are in it)."""

    per_copy: list[float]
    bounds: list[float]
    refs: list[float] = field(default_factory=list)  # the reference, after each pair

    def reference(self) -> float:
        """The reference's median over this direction's pairs; 0.0 if it was not timed."""
        return _median(self.refs) if self.refs else 0.0

    def value(self) -> tuple[float, bool]:
        """(median, False), or (the bounds' median, True) when the median is not resolved:
        <= 0, or smaller than the samples' own interquartile half-width (its sign unsure)."""
        med = float(np.median(self.per_copy))
        if max(self.bounds) == 0.0:  # nothing ran (no backward)
            return 0.0, False
        if med <= 0 or _spread(self.per_copy) > 1.0:
            return float(np.median(self.bounds)), True
        return med, False


def _direction(timed, runner: Runner, repeats: int, naive_above_s: float,
               precision: Precision, reference=None) -> tuple[Samples, int]:
    """One direction's samples and its N. The pilot, its own per direction (a backward can
    cost 100x its forward), decides between alone and differential."""
    pilot = min(timed(1) for _ in range(3))  # the first is cold
    if pilot >= naive_above_s:
        alone = [timed(1) for _ in range(repeats)]
        return Samples(alone, alone), 1
    n = _copies(pilot, runner)
    return _differential(timed, n, repeats, precision, reference=reference), n


def _copies(pilot: float, runner: Runner, target_s: float = TARGET_RUN_S) -> int:
    """N such that N copies last about TARGET_RUN_S, and N live outputs stay under
    MAX_LIVE_BYTES; even, and at least 2 (M = 1). A call that lasts the target alone needs no
    more copies: the difference of 2 and 1 cancels the run's fixed cost as well as 4 and 2 do,
    in half the time (the small grid re-measured both ways: they differ no more than the
    old timer does from itself, docs/validation/ops/measure-speed.md)."""
    n = int(np.ceil(target_s / max(pilot, 1e-7)))
    n = min(n, MAX_COPIES, max(2, MAX_LIVE_BYTES // max(runner.bytes_per_copy, 1)))
    return max(2, n + n % 2)


def _timed(runner: Runner, k: int, sync) -> float:
    sets = runner.fresh(k)
    sync()
    t0 = time.perf_counter()
    kept = runner.forward(sets)
    sync()
    elapsed = time.perf_counter() - t0
    del kept  # freed after the clock: a step frees its activations after its backward
    return elapsed


def _timed_backward(runner: Runner, k: int, sync) -> float:
    import torch

    sets = runner.fresh(k)
    outs = runner.outputs(sets)
    grads = [torch.ones_like(o) for o in outs]
    leaves = [t for _, _, ls in sets for t in ls]
    if not leaves:  # the output needs a gradient only through tensors we do not own
        return 0.0
    sync()
    t0 = time.perf_counter()
    # Gradients are returned, not accumulated: in a model only the weights are leaves, and
    # their first accumulation just keeps the tensor; an accumulation per input here would
    # be work a model's step does not do.
    torch.autograd.grad(outs, leaves, grads, allow_unused=True)
    sync()
    return time.perf_counter() - t0


def _differential(timed, n: int, repeats: int, precision: Precision = Precision(),
                  clock=time.perf_counter, reference=None) -> Samples:
    m = n // 2
    start = clock()
    _settle(timed, n, m)
    out = Samples([], [])
    while (rep := len(out.per_copy)) < repeats or (
            rep < precision.max_repeats and not _precise(out.per_copy, precision.rel)
            and clock() - start < precision.max_s):
        if rep % 2 == 0:  # alternate the order, so that neither always runs on a warmer cache
            t_n, t_m = timed(n), timed(m)
        else:
            t_m, t_n = timed(m), timed(n)
        out.per_copy.append((t_n - t_m) / (n - m))
        out.bounds.append(t_m / m)
        if reference is not None:
            out.refs.append(reference.sample())
    return out


SETTLE_RUNS = 4  # untimed N-copy runs at most, while each still faults memory in
SETTLED_BYTES = 1 << 20  # what an N-copy run may still fault in once settled


def _settle(timed, n: int, m: int) -> None:
    """Untimed runs of N and M copies until an N-copy run faults (almost) nothing in, at most
    SETTLE_RUNS: with freed memory kept (``keep_memory``) the allocator then serves every
    timed run from memory it holds. One pair was not always enough: what the copies allocate
    lands between the gradients freed before, and four 48 MiB gradients still faulted two
    tables in at the next run (a fresh page costs 1.5 ns a float here, a reused one 0.17)."""
    from ..profiler.memory import os_cost_of

    for _ in range(SETTLE_RUNS):
        _, fresh, _ = os_cost_of(lambda: timed(n))
        timed(m)
        if fresh <= SETTLED_BYTES:
            return


def _precise(values: list[float], rel: float | None) -> bool:
    """Whether the median's relative standard error (1.2533·σ/√n, σ from the interquartile
    range, robust to the outliers a busy machine adds) is at most ``rel``."""
    if rel is None:
        return True
    med = float(np.median(values))
    if med <= 0:
        return False
    q1, q3 = np.percentile(values, [25, 75])
    return 1.2533 * (q3 - q1) / 1.349 / np.sqrt(len(values)) / med <= rel


def _median(values) -> float:
    return max(float(np.median(values)), 0.0)


def _spread(values) -> float:
    """Relative half-width of the middle half of the samples (0.05: +-5 %)."""
    med = float(np.median(values))
    if med <= 0:
        return 0.0
    q1, q3 = np.percentile(values, [25, 75])
    return float((q3 - q1) / 2 / med)


def time_naive(call: Call, rng: np.random.Generator, device: str = "cpu", repeats: int = 5,
               sync=None) -> Timing:
    """The usual way, for comparison (docs/ops.md): a timer around one call, and around one
    backward of one output; the median of ``repeats``. What a run costs once is not cancelled."""
    sync = sync or (lambda: None)
    runner = Runner(call, rng, device)
    _timed(runner, 1, sync)  # warm, as the differential's pilot is
    fwd = [_timed(runner, 1, sync) for _ in range(repeats)]
    bwd = [0.0]
    if getattr(runner.outputs(runner.fresh(1))[0], "requires_grad", False):
        bwd = [_timed_backward(runner, 1, sync) for _ in range(repeats)]
    return Timing(fwd_s=_median(fwd), bwd_s=_median(bwd), samples=repeats,
                  fwd_spread=_spread(fwd), bwd_spread=_spread(bwd), copies=1)
