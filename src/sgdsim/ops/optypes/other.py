"""Every other call (views, copies, reductions, indexing...): timed when traced from a model,
estimated from its function and size; it has no sampled grid."""
from __future__ import annotations

from ..template import Call
from .base import OpType


def params_of(call: Call):
    sizes = [t.numel for t in call.tensors()]
    return {"fn": call.func, "numel": max(sizes, default=0)}


def build(p, dtype) -> Call:
    raise ValueError(f"{p['fn']}: an untyped call can only be timed from a traced model")


def sample(rng):
    raise ValueError("untyped calls have no sampled grid")


OTHER = OpType("other", (), frozenset({"numel"}), params_of, build, sample,
               "any other call, timed from traced models")
