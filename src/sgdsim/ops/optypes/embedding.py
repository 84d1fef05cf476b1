"""Embedding lookup (``aten.embedding``): the backward scatters into the whole table."""
from __future__ import annotations

from ..template import Call
from .base import OpType, dense, grad, log_int, numel


def params_of(call: Call):
    weight, indices = call.args[:2]
    return {"num": weight.shape[0], "dim": weight.shape[1], "indices": numel(indices.shape),
            "gw": int(weight.requires_grad)}


def build(p, dtype) -> Call:
    return Call("aten.embedding.default", (dense((p["num"], p["dim"]), grad(p["gw"]), dtype),
                                           dense((p["indices"],), False, "int64")))


def sample(rng):
    return {"num": log_int(rng, 2, 60000), "dim": log_int(rng, 16, 1024),
            "indices": log_int(rng, 1, 8192), "gw": 1}


EMBEDDING = OpType("embedding", ("aten.embedding.default",),
                   frozenset({"num", "dim", "indices"}), params_of, build, sample,
                   "embedding lookup")
