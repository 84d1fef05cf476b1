"""Softmax, log-softmax and the negative log-likelihood loss (cross-entropy = the last two)."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int, rows_cols, rowwise_terms

SOFTMAX_FUNCS = ("aten._softmax.default", "aten._safe_softmax.default")


def sm_params(call: Call):
    x, dim = call.args[:2]
    if dim not in (-1, len(x.shape) - 1):
        return None
    rows, cols = rows_cols(x)
    return {"rows": rows, "cols": cols, "gi": int(x.requires_grad)}


def _build(func):
    def build(p, dtype) -> Call:
        return Call(func, (dense((p["rows"], p["cols"]), grad(p["gi"]), dtype), -1, False))
    return build


def sm_sample(rng):
    def draw(r):
        return {"rows": log_int(r, 1, 65536), "cols": log_int(r, 2, 65536)}  # vocabularies
    return {**capped(rng, draw, lambda p: p["rows"] * p["cols"], 2e7),
            "gi": int(rng.random() < 0.9)}


def nll_params(call: Call):
    x, target = call.args[:2]
    if len(x.shape) != 2:
        return None
    return {"rows": x.shape[0], "cols": x.shape[1], "gi": int(x.requires_grad)}


def nll_build(p, dtype) -> Call:
    x = dense((p["rows"], p["cols"]), grad(p["gi"]), dtype)
    return Call("aten.nll_loss_forward.default", (x, dense((p["rows"],), False, "int64"), None,
                                                   1, -100))


def nll_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """The loss's forward, one term per rate: a fixed cost, autograd's bookkeeping, a cost
    per row (it reads one element of each, the target's class) and per row whose element is
    not in cache (the share of the input's bytes beyond ``cache_bytes``: a gather, one line a
    row). The last two terms are the backward's (0 here): see ``nll_backward_terms``."""
    rows, n = float(p["rows"]), float(p["rows"]) * float(p["cols"])
    missed = rows * beyond_cache(n, 1, dtype, cache_bytes) / n
    return [1.0, float(grad(p["gi"])), rows, missed, 0.0, 0.0]


def nll_backward_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """The backward writes the whole input's gradient, zeros but one element a row: the
    forward's fixed, bookkeeping and per-row terms, none for the gather, then a pass over
    every element and the elements beyond ``cache_bytes``."""
    rows, n = float(p["rows"]), float(p["rows"]) * float(p["cols"])
    return [1.0, float(grad(p["gi"])), rows, 0.0, n, beyond_cache(n, 1, dtype, cache_bytes)]


RC = frozenset({"rows", "cols"})
SOFTMAX = OpType("softmax", SOFTMAX_FUNCS, RC, sm_params, _build(SOFTMAX_FUNCS[0]), sm_sample,
                 "softmax over the last dimension", rowwise_terms)
LOG_SOFTMAX = OpType("log_softmax", ("aten._log_softmax.default",), RC, sm_params,
                     _build("aten._log_softmax.default"), sm_sample,
                     "log-softmax (the first half of cross-entropy)", rowwise_terms)
NLL_LOSS = OpType("nll_loss", ("aten.nll_loss_forward.default",), RC, nll_params, nll_build,
                  sm_sample, "negative log-likelihood (the second half of cross-entropy)",
                  nll_terms, nll_backward_terms)
