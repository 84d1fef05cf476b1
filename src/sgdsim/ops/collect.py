"""Measurement campaigns: a sampled grid of operator shapes (to train the estimator) or every
distinct call of a model's step (exact hits). Both time on this machine and yield OpRecords."""
from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from ..errors import ConfigError
from .optypes import OTHER_NAME, classify, optype, type_rng
from .records import Device, OpRecord, params_key
from .template import Call

DEFAULT_DTYPE = "float32"


def this_device(threads: int, device: str = "cpu") -> Device:
    """The device name ``sgdsim profile`` writes, so that a profile and a database agree."""
    import torch

    from ..profiler.api import _device, _device_name

    dev = _device(torch, device)
    name = _device_name(torch, dev, threads)
    driver = torch.version.cuda or "" if dev.type == "cuda" else ""
    return Device(name=name, kind=dev.type, framework=f"pytorch {torch.__version__}",
                  driver=f"cuda {driver}" if driver else "")


def call_key(item: tuple[str, dict, Call]) -> tuple[str, str, str]:
    """(type, parameters' key, dtype) of a (type, parameters, call) to time: a row's key less
    its device (``OpRecord.key[1:]``)."""
    name, params, call = item
    return name, params_key(params), call_dtype(call)


def call_dtype(call: Call) -> str:
    floats = [t.dtype for t in call.tensors() if t.dtype.startswith(("float", "bfloat"))]
    return floats[0] if floats else DEFAULT_DTYPE


# A type whose estimator fits more rates than RATES_PER_SAMPLE draws proportionally more
# shapes, up to MAX_SHAPE_FACTOR times ``samples``: held out on five EPYC grids, 30 rows
# against 90 of the same grid took the types with 15-30 rates from 11-25 % to 7-11 %, those
# with 4-8 rates by 0.4-2.4 points (docs/ops-runs.md, run 36). 5, not 8, since run 47: the
# matrix products and attention at 56-64 rows were the types furthest above their retest,
# pooled (mm, bmm 1.49-1.56x), and subsampled to 56 against 100 rows their held-out medians
# were 1.2-2 points higher. A grid below SCALED_FROM shapes a type (the README's small path)
# is a quick try, drawn as asked.
RATES_PER_SAMPLE = 5
MAX_SHAPE_FACTOR = 4
SCALED_FROM = 20


def grid_shapes(name: str, samples: int) -> int:
    """The shapes a grid of ``samples`` draws for type ``name``."""
    return _shapes(samples, _shape_factor(name))


def samples_measured(name: str, rows: int, most: int = 1000) -> int:
    """``grid_shapes`` inverted: the smallest ``--samples`` (at most ``most``) whose grid of
    ``name`` draws at least ``rows`` shapes, the one a grid of that many rows was measured with."""
    factor = _shape_factor(name)
    n = 1
    while n < most and _shapes(n, factor) < rows:
        n += 1
    return n


def _shape_factor(name: str) -> float:
    return min(MAX_SHAPE_FACTOR, max(1.0, optype(name).rates() / RATES_PER_SAMPLE))


def _shapes(samples: int, factor: float) -> int:
    return samples if samples < SCALED_FROM else int(round(samples * factor))


def grid_calls(types: list[str], samples: int, seed: int,
               dtype: str = DEFAULT_DTYPE) -> list[tuple[str, dict, Call]]:
    """``grid_shapes`` distinct parameter points per type (fewer if the type's space is
    small), each type drawn from its own stream (``type_rng``): a larger grid of a type
    begins with the smaller one's points."""
    out = []
    for name in types:
        t = optype(name)
        if name == OTHER_NAME:
            raise ConfigError("'other' has no sampled grid: measure it from models "
                              "(sgdsim ops measure --model ...)")
        rng = type_rng(seed, name)
        seen: set[str] = set()
        shapes = grid_shapes(name, samples)
        for _ in range(shapes * 20):
            if len(seen) >= shapes:
                break
            p = t.sample(rng)
            if params_key(p) not in seen:
                seen.add(params_key(p))
                out.append((name, p, t.build(p, dtype)))
    return out


def model_calls(spec: str, batch_size: int, dtype: str = DEFAULT_DTYPE,
                autocast: str | None = None) -> list[tuple[str, dict, Call]]:
    """One call per distinct (type, parameters) of the model's step, optimizer included, its
    floating-point tensors in ``dtype``, or each in the precision ``autocast`` gives it."""
    from .graph import trace_model

    step = trace_model(spec, batch_size, autocast)
    calls = list(step.calls) + [c for cs in step.update_calls().values() for c in cs]
    if dtype != DEFAULT_DTYPE:
        calls = [c.in_dtype(dtype) for c in calls]
    out, seen = [], set()
    for call in calls:
        name, params = classify(call)
        key = (name, params_key(params), call_dtype(call))
        if key not in seen:
            seen.add(key)
            out.append((name, params, call))
    return out


def measure_calls(todo, device: Device, rng: np.random.Generator, repeats: int = 5,
                  skip: set | None = None, failures: list | None = None,
                  precision=None, reference: bool = True) -> Iterator[OpRecord]:
    """Time each call (``measure.time_call``: differential, a long call alone, to
    ``precision``; with ``reference``, paired with its type's reference call), skipping keys
    in ``skip``; yields records as it goes.
    With a ``failures`` list, a call that cannot be replayed is noted there and skipped."""
    from .measure import Precision, keep_memory, time_call

    keep_memory()
    refs: dict[tuple[str, str], object] = {}
    for name, params, call in todo:
        dtype = call_dtype(call)
        if skip and call_key((name, params, call)) in skip:
            continue
        try:
            ref = _reference(refs, name, dtype, device) if reference else None
            t = time_call(call, rng, device.kind, repeats, _sync(device),
                          precision=precision or Precision(), reference=ref)
        except Exception as exc:  # an untyped call we cannot replay: say so, time the rest
            if failures is None:
                raise
            failures.append(f"{call.func}: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
            continue
        yield timed_record(device, name, params, dtype, t)


def timed_record(device: Device, name: str, params: dict, dtype: str, t) -> OpRecord:
    """The row of one call timed now (``t``: ``measure.Timing``)."""
    return OpRecord(device=device, op=name, params=params, dtype=dtype, fwd_s=t.fwd_s,
                    bwd_s=t.bwd_s, samples=t.samples, fwd_spread=t.fwd_spread,
                    bwd_spread=t.bwd_spread, measured_at=time.time(), fwd_bound=t.fwd_bound,
                    bwd_bound=t.bwd_bound, fwd_ref_s=t.fwd_ref_s, bwd_ref_s=t.bwd_ref_s)


def _reference(refs: dict, op: str, dtype: str, device: Device):
    """The type's reference on this device, built at its first row (None for untyped calls:
    'other' has no sampler to draw a reference from)."""
    from .reference import Reference

    if op == OTHER_NAME:
        return None
    if (op, dtype) not in refs:
        try:
            refs[(op, dtype)] = Reference(op, dtype, device.kind, _sync(device))
        except Exception:  # noqa: BLE001 - rows are then stored without it; a row that cannot run says why
            refs[(op, dtype)] = None
    return refs[(op, dtype)]


def _sync(device: Device):
    if device.kind != "cuda":
        return None
    import torch

    return torch.cuda.synchronize
