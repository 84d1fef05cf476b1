"""Max pooling, average pooling and the global average (``mean`` over the spatial dims)."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int, numel, window_out


def maxpool_params(call: Call):
    x, kernel = call.args[:2]
    stride = call.args[2] if len(call.args) > 2 and call.args[2] else kernel
    padding = call.args[3] if len(call.args) > 3 else (0, 0)
    if len(x.shape) != 4:
        return None
    kernel, stride, padding = (_pair(v) for v in (kernel, stride, padding))
    n, c, h, w = x.shape
    return {"n": n, "c": c, "h": h, "w": w, "k": kernel[0], "s": stride[0], "p": padding[0],
            "gi": int(x.requires_grad)}


def _pair(v):
    return tuple(v) * (2 if len(v) == 1 else 1) if isinstance(v, (tuple, list)) else (v, v)


def maxpool_build(p, dtype) -> Call:
    x = dense((p["n"], p["c"], p["h"], p["w"]), grad(p["gi"]), dtype)
    return Call("aten.max_pool2d_with_indices.default",
                (x, (p["k"], p["k"]), (p["s"], p["s"]), (p["p"], p["p"])))


def _spatial(rng):
    size = log_int(rng, 4, 112)
    return {"n": log_int(rng, 1, 32), "c": log_int(rng, 3, 512), "h": size, "w": size}


def _volume(p):
    return p["n"] * p["c"] * p["h"] * p["w"]


def maxpool_sample(rng):
    k = int(rng.choice([2, 3]))
    return {**capped(rng, _spatial, _volume, 2e7), "k": k, "s": 2, "p": k // 2 if k == 3 else 0,
            "gi": int(rng.random() < 0.9)}


def mean_params(call: Call):
    x = call.args[0]
    dims = call.args[1] if len(call.args) > 1 else None
    if not dims:
        return None
    kept = numel(d for i, d in enumerate(x.shape) if i not in {k % len(x.shape) for k in dims})
    return {"numel": numel(x.shape), "out": kept, "gi": int(x.requires_grad)}


def mean_build(p, dtype) -> Call:
    out = int(p["out"])
    x = dense((out, max(int(p["numel"]) // out, 1)), grad(p["gi"]), dtype)
    return Call("aten.mean.dim", (x, [-1], True))


def mean_sample(rng):
    out = log_int(rng, 1, 65536)
    return {"numel": out * log_int(rng, 1, max(2, int(2e7 // out))), "out": out,
            "gi": int(rng.random() < 0.9)}


def mean_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A mean's time, one term per rate: a fixed cost, autograd's bookkeeping, one per input
    element (summed), one per output row reduced (each row's reduction is set up and its
    partial sums combined: a few ns, which rows of 2-4 elements pay in full) and one per
    output of a reduction over one element (a copy, no reduction), and the input elements
    past ``cache_bytes``."""
    n, out = float(p["numel"]), float(p["out"])
    single = float(n <= out)
    return [1.0, float(grad(p["gi"])), n, out * (1.0 - single), out * single,
            beyond_cache(n, 1, dtype, cache_bytes)]


def pool_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A 2-D pooling's time, one term per rate: a fixed cost, autograd's bookkeeping, one per
    input element (read), one per output element (written, with its index for max pooling),
    one per element of each output's window (k x k compared or summed), the input and output
    elements whose bytes do not fit in ``cache_bytes`` (streamed from memory), and the
    window's elements again when they do not fit: past the cache every window read waits on
    memory. On run 11's grid max pooling takes about 14 ns an output while its input and output
    fit in 256 KiB (the cache size the fit picks on all five committed grids), 24 (2x2) or 35
    (3x3) past it: a step, not the ramp the streamed elements give."""
    return _pool_terms(p, dtype, cache_bytes, two_bands=False)


BAND = 8  # max pooling's window step: past the cache up to BAND times it, and beyond


def maxpool_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """``pool_terms`` with the window's step in two bands, each at its own rate: input and
    output past the cache but within ``BAND`` times it, and beyond that. With one step, max
    pooling's calls in the first band were 4-10 % slower than estimated and those beyond it
    3-6 % faster, on each of runs 10-18's grids; two bands took its 4-fold held-out forward
    median lower on all seven (the factor chosen among 2, 4, 8 and 16 on them, so in sample;
    docs/ops-runs.md, run 20). Average pooling gained nothing from it and keeps one step."""
    return _pool_terms(p, dtype, cache_bytes, two_bands=True)


def _pool_terms(p, dtype: str, cache_bytes: float, two_bands: bool) -> list[float]:
    k, s, pad = p["k"], p["s"], p["p"]
    planes = float(p["n"]) * float(p["c"])
    out = planes * window_out(p["h"], k, s, pad) * window_out(p["w"], k, s, pad)
    inp = planes * p["h"] * p["w"]
    spill = beyond_cache(inp + out, 1, dtype, cache_bytes)
    terms = [1.0, float(grad(p["gi"])), inp, out, out * k * k, spill]
    step = out * k * k * float(spill > 0)
    if not two_bands:
        return terms + [step]
    near = float(beyond_cache(inp + out, 1, dtype, BAND * cache_bytes) == 0)
    return terms + [step * near, step * (1.0 - near)]


MAX_POOL = OpType("max_pool2d", ("aten.max_pool2d_with_indices.default",),
                  frozenset({"n", "c", "h", "w"}), maxpool_params, maxpool_build, maxpool_sample,
                  "2-D max pooling", maxpool_terms)
MEAN = OpType("mean", ("aten.mean.dim",), frozenset({"numel", "out"}), mean_params, mean_build,
              mean_sample, "mean over some dimensions (global average pooling)", mean_terms)


def avgpool_build(p, dtype) -> Call:
    x = dense((p["n"], p["c"], p["h"], p["w"]), grad(p["gi"]), dtype)
    return Call("aten.avg_pool2d.default",
                (x, (p["k"], p["k"]), (p["s"], p["s"]), (p["p"], p["p"])))


AVG_POOL = OpType("avg_pool2d", ("aten.avg_pool2d.default",), frozenset({"n", "c", "h", "w"}),
                  maxpool_params, avgpool_build, maxpool_sample, "2-D average pooling",
                  pool_terms)
