"""Embedding lookup (``aten.embedding``): the backward scatters into the whole table."""
from __future__ import annotations

from ..template import Call
from .base import OpType, aligned_int, dense, grad, log_int, numel

VOCAB_SHARE = 0.25  # tables of a language model's vocabulary: see ``sample``


def params_of(call: Call):
    weight, indices = call.args[:2]
    return {"num": weight.shape[0], "dim": weight.shape[1], "indices": numel(indices.shape),
            "gw": int(weight.requires_grad)}


def build(p, dtype) -> Call:
    return Call("aten.embedding.default", (dense((p["num"], p["dim"]), grad(p["gw"]), dtype),
                                           dense((p["indices"],), False, "int64")))


def sample(rng):
    """Rows and width drawn apart seldom make a vocabulary's table (BERT's 23 M weights, GPT-2's
    39 M): a share of the draws are such tables, whose dense gradient, a pass over fresh memory
    of the table's size, ran at 2.9-3.2 ns an element against 0.2-0.7 for the small ones."""
    if rng.random() < VOCAB_SHARE:
        num, dim = log_int(rng, 8192, 65536), aligned_int(rng, 256, 1600)
    else:
        num, dim = log_int(rng, 2, 60000), log_int(rng, 16, 1024)
    return {"num": num, "dim": dim, "indices": log_int(rng, 1, 8192), "gw": 1}


def embedding_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A lookup's time, one term per rate (each direction fits its own): a fixed cost, one per
    index, one per element gathered (forward) or added back (backward), and the table's
    elements when it learns: its backward's gradient is dense, a fresh table-sized tensor
    zeroed before the scatter (GPT-2's 39 M-element table: 50 ms here, whatever the batch).
    A forward's rate for that last term fits to 0."""
    dim, indices = float(p["dim"]), float(p["indices"])
    return [1.0, indices, indices * dim, float(p["num"]) * dim * grad(p.get("gw", 1))]


EMBEDDING = OpType("embedding", ("aten.embedding.default",),
                   frozenset({"num", "dim", "indices"}), params_of, build, sample,
                   "embedding lookup", embedding_terms)
