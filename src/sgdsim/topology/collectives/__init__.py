"""All-reduce algorithms on a ``Topology``: one file each, registered here.

Each is ``call_s(size_bytes, ranks, topology) -> seconds`` for one call over every rank,
vectorised over ``size_bytes``; a new algorithm is one file and one line below.
"""
from __future__ import annotations

import numpy as np

from ...spec.registries import COLLECTIVES
from ..model import Topology
from . import hierarchical, ring, tree

for _name, _call in (
    ("ring", ring.call_s),
    ("hierarchical", hierarchical.call_s),
    ("tree", tree.call_s),
):
    COLLECTIVES.register(_name, _call)


def allreduce_s(collective: str, size_bytes, ranks: int, topology: Topology) -> np.ndarray:
    """Duration of one call per entry of ``size_bytes``; a call of 0 bytes is not made."""
    size = np.asarray(size_bytes, np.float64)
    return np.where(size > 0, COLLECTIVES[collective](size, ranks, topology), 0.0)
