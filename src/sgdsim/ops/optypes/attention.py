"""Scaled-dot-product attention, read at the ``F.scaled_dot_product_attention`` call (the trace
sees it before it is decomposed: on a CPU or a GPU it runs as one fused kernel)."""
from __future__ import annotations

from ..template import Call
from .base import OpType, capped, dense, grad, log_int

FUNC = "F.scaled_dot_product_attention"


def params_of(call: Call):
    q, k = call.args[:2]
    kw = dict(call.kwargs)
    mask = kw.get("attn_mask", call.args[3] if len(call.args) > 3 else None)
    if len(q.shape) != 4:
        return None
    b, h, lq, d = q.shape
    return {"b": b, "heads": h, "lq": lq, "lk": k.shape[2], "d": d,
            "causal": int(bool(kw.get("is_causal", False))), "mask": int(mask is not None),
            "gi": int(q.requires_grad)}


def build(p, dtype) -> Call:
    g = grad(p["gi"])
    q = dense((p["b"], p["heads"], p["lq"], p["d"]), g, dtype)
    kv = dense((p["b"], p["heads"], p["lk"], p["d"]), g, dtype)
    kwargs = [("is_causal", bool(p["causal"]))]
    if p["mask"]:
        kwargs.append(("attn_mask", dense((p["b"], 1, p["lq"], p["lk"]), False, dtype)))
    return Call(FUNC, (q, kv, kv), tuple(kwargs))


def _draw(rng):
    length = log_int(rng, 8, 512)
    return {"b": log_int(rng, 1, 32), "heads": int(rng.choice([1, 4, 8, 12, 16])), "lq": length,
            "lk": length, "d": int(rng.choice([32, 64, 128]))}


def sample(rng):
    p = capped(rng, _draw, lambda p: p["b"] * p["heads"] * p["lq"] * p["lk"] * p["d"], 3e8)
    causal = int(rng.random() < 0.4)
    return {**p, "causal": causal, "mask": 0 if causal else int(rng.random() < 0.5), "gi": 1}


SDPA = OpType("sdpa", (FUNC,), frozenset({"b", "heads", "lq", "lk", "d"}), params_of, build,
              sample, "scaled-dot-product attention (fused)")
