"""Batch norm (training mode, as in a training step) and layer norm."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int, numel, rows_cols, rowwise_terms

BN_FUNCS = ("aten.native_batch_norm.default", "aten._native_batch_norm_legit.default")


def bn_params(call: Call):
    x = call.args[0]
    if len(x.shape) < 2:
        return None
    return {"n": x.shape[0], "c": x.shape[1], "hw": numel(x.shape[2:]),
            "gi": int(x.requires_grad)}


def bn_build(p, dtype) -> Call:
    c = p["c"]
    x = dense((p["n"], c, p["hw"], 1), grad(p["gi"]), dtype)
    stats = dense((c,), False, dtype)
    return Call(BN_FUNCS[0], (x, dense((c,), True, dtype), dense((c,), True, dtype), stats,
                              stats, True, 0.1, 1e-5))


def bn_sample(rng):
    def draw(r):
        size = log_int(r, 1, 112)
        return {"n": log_int(r, 1, 32), "c": log_int(r, 8, 1024), "hw": size * size}
    return {**capped(rng, draw, lambda p: p["n"] * p["c"] * p["hw"], 2e7),
            "gi": int(rng.random() < 0.9)}


def bn_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A batch norm's time, one term per rate: a fixed cost, autograd's bookkeeping, one per
    element (the passes over x: statistics, normalisation), again when the input's gradient is
    made (the backward's passes over x and the incoming gradient), one per channel (its
    statistics and affine parameters), one per (image, channel) plane (each plane's loop set up:
    a 7 x 7 plane is 49 elements), and the elements beyond ``cache_bytes`` (input and output)."""
    e = float(p["n"]) * p["c"] * p["hw"]
    g = float(grad(p["gi"]))
    return [1.0, g, e, e * g, float(p["c"]), float(p["n"]) * p["c"],
            beyond_cache(e, 2, dtype, cache_bytes)]


def ln_params(call: Call):
    x, shape = call.args[:2]
    if len(shape) != 1:
        return None
    rows, cols = rows_cols(x)
    return {"rows": rows, "cols": cols, "gi": int(x.requires_grad)}


def ln_build(p, dtype) -> Call:
    cols = p["cols"]
    return Call("aten.native_layer_norm.default",
                (dense((p["rows"], cols), grad(p["gi"]), dtype), (cols,),
                 dense((cols,), True, dtype), dense((cols,), True, dtype), 1e-5))


def ln_sample(rng):
    def draw(r):
        return {"rows": log_int(r, 1, 8192), "cols": log_int(r, 16, 4096)}
    return {**capped(rng, draw, lambda p: p["rows"] * p["cols"], 2e7),
            "gi": int(rng.random() < 0.9)}


BATCH_NORM = OpType("batch_norm", BN_FUNCS, frozenset({"n", "c", "hw"}), bn_params, bn_build,
                    bn_sample, "batch norm in training mode", bn_terms)
LAYER_NORM = OpType("layer_norm", ("aten.native_layer_norm.default",),
                    frozenset({"rows", "cols"}), ln_params, ln_build, ln_sample,
                    "layer norm over the last dimension", rowwise_terms)
