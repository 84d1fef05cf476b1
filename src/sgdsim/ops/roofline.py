"""A roofline for calls the database cannot time: an operator type with neither a measurement
nor a trained estimator on the target device.

One call's work is its FLOPs and the bytes it moves; one device's roofline is a fixed cost per
call and two achieved rates, fitted from whatever that device already measured, and its
uncertainty is the roofline's own error on those same rows (three numbers fitted against
hundreds of rows: in-sample and held-out error hardly differ). Time = fixed + max(flops / F,
bytes / B). It is a coarse guess, and the estimate says so with its measured error.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ConfigError
from .optypes import OTHER_NAME, REGISTRY
from .optypes.base import item_bytes
from .optypes.conv import macs
from .records import learnable
from .template import Call

# The types whose time follows their arithmetic; every other type is counted as 0 FLOPs
# (memory bound): its arithmetic per byte is a few operations at most.
FLOP_BOUND = frozenset({"mm", "addmm", "bmm", "conv2d", "sdpa"})
FIXED_PERCENTILE = 10  # a low percentile of measured times: the cost of a call doing nothing

@dataclass(frozen=True)
class Work:
    """What one call does forward and backward (the backward is 0 where nothing needs a
    gradient: the call has none)."""

    fwd_flops: float
    fwd_bytes: float
    bwd_flops: float
    bwd_bytes: float


def forward_flops(op: str, params: dict) -> float:
    """Multiply-adds count two FLOPs; types outside FLOP_BOUND count none."""
    p = params
    if op in ("mm", "addmm", "bmm"):
        return 2.0 * p.get("b", 1) * p["m"] * p["k"] * p["n"]
    if op == "conv2d":
        return 2.0 * macs(p)
    if op == "sdpa":  # Q·Kᵀ and P·V, each 2·L·S·E per head; a causal mask is not discounted
        return 4.0 * p["b"] * p["heads"] * p["lq"] * p["lk"] * p["d"]
    return 0.0


def forward_bytes(call: Call) -> float:
    """Every input tensor read once, plus an output the size of the largest input: an
    approximation (a matmul's output is m·n, a reduction's is smaller), exact for element-wise
    calls, the common memory-bound case."""
    sizes = [t.numel * item_bytes(t.dtype) for t in call.tensors()]
    return float(sum(sizes) + max(sizes, default=0))


def work_of(call: Call, op: str, params: dict) -> Work:
    """``op``, ``params``: ``optypes.classify(call)``. A backward is taken as twice the
    forward's work (two products per product for a matmul or a conv; reading the saved input
    and the incoming gradient, writing the gradient, for an element-wise call), but for the
    gathers, whose backward writes a whole dense gradient."""
    back = 2.0 if call.needs_grad else 0.0
    if op in _GATHERS:
        fwd_bytes, bwd_bytes = _GATHERS[op](params, _item_bytes(call))
        return Work(0.0, fwd_bytes, 0.0, bwd_bytes if back else 0.0)
    flops, moved = forward_flops(op, params), forward_bytes(call)
    return Work(flops, moved, back * flops, back * moved)


CAST = "aten._to_copy.default"  # autocast's casts (and .to(dtype)): a read and a write


def cast_types(call: Call) -> tuple[str, str]:
    """(the type a cast reads, the type it writes): its input's, and its ``dtype`` argument
    (the input's own when it has none: a copy)."""
    src = call.tensors()[0].dtype if call.tensors() else "float32"
    dst = dict(call.kwargs).get("dtype")
    return src, dst.text.removeprefix("torch.") if dst is not None else src


def cast_work(call: Call) -> Work:
    """A cast reads its input and writes it in the other type; its backward casts the
    gradient back (as much again) when the input needs one."""
    n = sum(t.numel for t in call.tensors())
    moved = float(n * sum(item_bytes(t) for t in cast_types(call)))
    return Work(0.0, moved, 0.0, moved if call.needs_grad else 0.0)


def _item_bytes(call: Call) -> int:
    tensors = call.tensors()
    return item_bytes(tensors[0].dtype) if tensors else 4


# Gathers read a few rows of a large input: counting the whole input (the generic rule) put
# them 30x (embedding) and 116x (nll_loss) above their measured time on the committed grid.
# (forward bytes, backward bytes) from the parameters and the float size; indices are int64.
_GATHERS = {
    # rows read and written; backward: the dense gradient of the whole table, and the rows
    "embedding": lambda p, s: (p["indices"] * (2 * p["dim"] * s + 8),
                               p["num"] * p["dim"] * s + 2 * p["indices"] * p["dim"] * s),
    # one log-probability and one target per row; backward: the dense input gradient
    "nll_loss": lambda p, s: (p["rows"] * (s + 8) + s, p["rows"] * (p["cols"] * s + 8)),
}


@dataclass(frozen=True)
class Roofline:
    """One device's fitted roofline. A rate nothing measured is ``inf`` (its side of the
    roofline counts as 0 s) and listed in ``unmeasured``."""

    device: str
    flops_per_s: float
    mem_Bps: float
    fixed_fwd_s: float
    fixed_bwd_s: float
    rows: int  # measured calls the fit and its error come from
    flop_rows: int  # of which of a FLOP_BOUND type
    error: dict  # per direction: median and 90th percentile of |roofline/measured - 1|, rows
    unmeasured: tuple[str, ...] = ()

    def times_s(self, work: Work) -> tuple[float, float]:
        fwd = self.fixed_fwd_s + max(work.fwd_flops / self.flops_per_s,
                                     work.fwd_bytes / self.mem_Bps)
        if work.bwd_flops == 0 and work.bwd_bytes == 0:
            return fwd, 0.0
        return fwd, self.fixed_bwd_s + max(work.bwd_flops / self.flops_per_s,
                                           work.bwd_bytes / self.mem_Bps)

    def as_dict(self) -> dict:
        """For a profile's provenance (JSON: an unmeasured rate is null)."""
        def finite(x):
            return float(x) if np.isfinite(x) else None
        return {"device": self.device, "flops_per_s": finite(self.flops_per_s),
                "mem_Bps": finite(self.mem_Bps), "fixed_fwd_s": self.fixed_fwd_s,
                "fixed_bwd_s": self.fixed_bwd_s, "rows": self.rows,
                "flop_bound_rows": self.flop_rows, "error": self.error,
                "unmeasured": list(self.unmeasured)}


def fit_roofline(db, device: str, db_name: str = "DB") -> Roofline:
    """The roofline of ``device`` from every typed call it measured (untyped calls cannot be
    rebuilt to count their work). One line, and what to run, when it measured nothing."""
    rows = _rows(db.load(device=device))
    if not rows:
        db_arg = shlex.quote(db_name)
        raise ConfigError(f"nothing measured on {device!r} to fit a roofline from: run "
                          f"'sgdsim ops measure --grid all --samples 10 --db {db_arg}' on that "
                          f"device, then 'sgdsim ops train --db {db_arg}'")
    flop_bound = np.array([op in FLOP_BOUND for op, *_ in rows])
    works = [w for _, w, _, _ in rows]
    fwd_flops = np.array([w.fwd_flops for w in works])
    fwd_bytes = np.array([w.fwd_bytes for w in works])
    fwd_s = np.array([f for *_, f, _ in rows])
    bwd_s = np.array([b for *_, b in rows])
    has_bwd = np.array([w.bwd_bytes > 0 for w in works]) & (bwd_s > 0)
    fixed_fwd = float(np.percentile(fwd_s, FIXED_PERCENTILE))
    fixed_bwd = float(np.percentile(bwd_s[has_bwd], FIXED_PERCENTILE)) if has_bwd.any() \
        else fixed_fwd
    flops_rate = rate_per_s(fwd_flops[flop_bound], fwd_s[flop_bound], fixed_fwd)
    # no memory-bound row: the bytes a FLOP-bound call moves, per second, bound the bandwidth
    # from below (such a call is slower than its bytes alone would make it)
    mem_rate = rate_per_s(fwd_bytes[~flop_bound], fwd_s[~flop_bound], fixed_fwd) or \
        rate_per_s(fwd_bytes, fwd_s, fixed_fwd)
    unmeasured = tuple(name for name, rate in (("flops_per_s", flops_rate),
                                               ("mem_Bps", mem_rate)) if rate is None)
    fit = Roofline(device, flops_rate or np.inf, mem_rate or np.inf, fixed_fwd, fixed_bwd,
                   len(rows), int(flop_bound.sum()), {}, unmeasured)
    return _with_error(fit, works, fwd_s, bwd_s)


def _rows(records) -> list[tuple[str, Work, float, float]]:
    out = []
    for r in learnable(records)[0]:  # a bound is not a time to fit a rate to
        if r.op == OTHER_NAME or r.op not in REGISTRY:
            continue
        try:
            call = REGISTRY[r.op].build(r.params, r.dtype)
        except (KeyError, TypeError, ValueError):  # a row of another version's parameters
            continue
        out.append((r.op, work_of(call, r.op, r.params), r.fwd_s, r.bwd_s))
    return out


def rate_per_s(work, times_s, fixed_s: float) -> float | None:
    """Work per second beyond the fixed cost, summed over calls (time-weighted: a step's time
    is its long calls'; on the committed grid this beats the median call's rate both per
    call and per model, docs/ops.md), from calls lasting at least twice the fixed cost (in
    one that barely exceeds it the difference is noise). Else any call above the fixed cost;
    else whole times (a lower bound)."""
    for ok in ((work > 0) & (times_s >= 2 * fixed_s), (work > 0) & (times_s > fixed_s)):
        if ok.any():
            return float(work[ok].sum() / (times_s[ok] - fixed_s).sum())
    ok = (work > 0) & (times_s > 0)
    return float(work[ok].sum() / times_s[ok].sum()) if ok.any() else None


def _with_error(fit: Roofline, works, fwd_s, bwd_s) -> Roofline:
    predicted = np.array([fit.times_s(w) for w in works])
    error = {}
    for name, col, measured in (("fwd", 0, fwd_s), ("bwd", 1, bwd_s)):
        ok = (measured > 0) & (predicted[:, col] > 0)
        rel = np.abs(predicted[ok, col] / measured[ok] - 1)
        error[name] = {"median": float(np.median(rel)) if ok.any() else None,
                       "p90": float(np.percentile(rel, 90)) if ok.any() else None,
                       "rows": int(ok.sum())}
    return replace(fit, error=error)
