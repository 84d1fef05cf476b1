"""Scaled-dot-product attention, read at the ``F.scaled_dot_product_attention`` call (the trace
sees it before it is decomposed: on a CPU or a GPU it runs as one fused kernel).

Training-mode dropout inside the call (GPT-2's and BERT's attention) is a parameter: on a CPU
it leaves the fused kernel for the decomposed one, 4-5x the forward time at GPT-2's shapes
(b 4, 12 heads, 64 tokens: 1.2 ms without, 6.0 ms with ``dropout_p=0.1``). So is a boolean
mask (``mask`` 2) against a float one (1): the boolean one is turned into a float one first."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int

FUNC = "F.scaled_dot_product_attention"
DROPOUT_P = 0.1  # what a call with dropout is timed with: the rate's value hardly matters
# half the draws: BERT's and GPT-2's training calls all take the dropout path, and at 0.3 a
# grid of 10 shapes (the README's small path) mostly had too few of them to fit its rates
DROPOUT_SHARE = 0.5


def params_of(call: Call):
    q, k = call.args[:2]
    kw = dict(call.kwargs)
    mask = kw.get("attn_mask", call.args[3] if len(call.args) > 3 else None)
    dropout = kw.get("dropout_p", call.args[4] if len(call.args) > 4 else 0.0)
    if len(q.shape) != 4:
        return None
    b, h, lq, d = q.shape
    return {"b": b, "heads": h, "lq": lq, "lk": k.shape[2], "d": d,
            "causal": int(bool(kw.get("is_causal", False))), "mask": _mask_kind(mask),
            "dropout": int(float(dropout or 0.0) > 0.0), "gi": int(q.requires_grad)}


def _mask_kind(mask) -> int:
    """0: no mask, 1: a float (additive) mask, 2: a boolean one."""
    if mask is None:
        return 0
    return 2 if getattr(mask, "dtype", None) == "bool" else 1


def build(p, dtype) -> Call:
    g = grad(p["gi"])
    q = dense((p["b"], p["heads"], p["lq"], p["d"]), g, dtype)
    kv = dense((p["b"], p["heads"], p["lk"], p["d"]), g, dtype)
    kwargs = [("is_causal", bool(p["causal"]))]
    if p["mask"]:
        kind = "bool" if int(p["mask"]) == 2 else dtype
        kwargs.append(("attn_mask", dense((p["b"], 1, p["lq"], p["lk"]), False, kind)))
    if int(p.get("dropout", 0)):
        kwargs.append(("dropout_p", DROPOUT_P))
    return Call(FUNC, (q, kv, kv), tuple(kwargs))


def _draw(rng):
    length = log_int(rng, 8, 512)
    return {"b": log_int(rng, 1, 32), "heads": int(rng.choice([1, 4, 8, 12, 16])), "lq": length,
            "lk": length, "d": int(rng.choice([32, 64, 128]))}


def sample(rng):
    p = capped(rng, _draw, lambda p: p["b"] * p["heads"] * p["lq"] * p["lk"] * p["d"], 3e8)
    causal = int(rng.random() < 0.4)
    mask = 0 if causal else int(rng.choice([0, 1, 2]))
    return {**p, "causal": causal, "mask": mask, "dropout": int(rng.random() < DROPOUT_SHARE), "gi": 1}


def sdpa_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """An attention call's time, one term per rate: a fixed cost, autograd's bookkeeping, one
    per (batch, head) and one per query row (the fused kernel's blocks are set up per head and
    per block of rows), the two products' multiply-adds and the scores' elements (each an exp)
    on the fused path, the multiply-adds again where causal (about half the blocks are
    skipped), both again on the decomposed path that dropout takes (the scores are written
    out, softmaxed and masked in memory), a mask's elements (read; a boolean one converted to
    a float one first), the query, key, value and output elements past ``cache_bytes``, and
    what a path adds per call and per (batch, head): dropout's decomposed path launches several
    kernels, a mask is broadcast over the heads, the causal kernel sets up its own blocks
    (docs/ops-runs.md, run 18)."""
    bh = float(p["b"]) * p["heads"]
    scores = bh * p["lq"] * p["lk"]
    macs = scores * p["d"]
    dropout, causal, mask = int(p.get("dropout", 0)), int(p["causal"]), int(p["mask"])
    fused, has_mask = 1 - dropout, float(mask > 0)
    masked = float(p["b"]) * p["lq"] * p["lk"] * has_mask
    qkvo = bh * (2 * p["lq"] + 2 * p["lk"]) * p["d"]
    return [1.0, float(grad(p["gi"])), bh, bh * p["lq"], macs * fused * (1 - causal),
            macs * fused * causal, scores * fused, macs * dropout, scores * dropout, masked,
            masked * (mask == 2), beyond_cache(qkvo, 1, dtype, cache_bytes),
            float(dropout), has_mask, float(causal), bh * dropout, bh * has_mask]


SDPA = OpType("sdpa", (FUNC,), frozenset({"b", "heads", "lq", "lk", "d"}), params_of, build,
              sample, "scaled-dot-product attention (fused)", sdpa_terms,
              added=(("dropout", 0),))  # no grid drew dropout before it was read
