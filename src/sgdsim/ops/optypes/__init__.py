"""The operator types: one file each, one line in ``TYPES``.

``classify(call)`` names the type of a traced call and reads its parameters; a call no type
claims is ``other`` (timed when traced, never sampled).
"""
from __future__ import annotations

import zlib

import numpy as np

from ...errors import ConfigError
from ..template import Call
from .attention import SDPA
from .base import OpType, Params
from .conv import CONV2D
from .embedding import EMBEDDING
from .matmul import ADDMM, BMM, MM
from .norm import BATCH_NORM, LAYER_NORM
from .other import OTHER
from .pointwise import ELTWISE, GELU, RELU
from .pool import AVG_POOL, MAX_POOL, MEAN
from .softmax import LOG_SOFTMAX, NLL_LOSS, SOFTMAX

TYPES: tuple[OpType, ...] = (CONV2D, ADDMM, MM, BMM, BATCH_NORM, LAYER_NORM, RELU, GELU,
                             ELTWISE, MAX_POOL, AVG_POOL, MEAN, SOFTMAX, LOG_SOFTMAX, NLL_LOSS,
                             EMBEDDING, SDPA, OTHER)
REGISTRY: dict[str, OpType] = {t.name: t for t in TYPES}
OTHER_NAME = OTHER.name
SAMPLED = tuple(t.name for t in TYPES if t is not OTHER)
_BY_FUNC: dict[str, OpType] = {f: t for t in TYPES for f in t.funcs}


def classify(call: Call) -> tuple[str, Params]:
    """(type name, canonical parameters) of a traced call."""
    optype = _BY_FUNC.get(call.func)
    params = optype.params_of(call) if optype is not None else None
    if params is None:
        optype, params = OTHER, OTHER.params_of(call)
    return optype.name, {k: _plain(v) for k, v in params.items()}


def _plain(value):
    return value if isinstance(value, (str, float)) else int(value)


def complete(op: str, params: Params) -> Params:
    """A stored row's parameters with those its type reads since (``OpType.added``)."""
    t = REGISTRY.get(op)
    return t.complete(params) if t is not None else params


def optype(name: str) -> OpType:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown operator type {name!r} "
                          f"(known: {', '.join(REGISTRY)})") from None


def type_rng(seed: int, name: str) -> np.random.Generator:
    """A type's own random stream: its grid draws and its training do not depend on which
    other types were asked for, or in what order (``--grid conv2d`` draws the rows
    ``--grid all`` draws for conv2d)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def wanted_types(text: str) -> set[str] | None:
    """``--op``: "all" (None: every type), or a comma list of type names, each known."""
    return None if text == "all" else {optype(name.strip()).name for name in text.split(",")}


__all__ = ["TYPES", "REGISTRY", "SAMPLED", "OTHER_NAME", "OpType", "Params", "classify", "complete", "optype", "wanted_types"]
