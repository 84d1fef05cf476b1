"""Architectures: how a step's transfers map onto the cluster, one file each.

An architecture says which simulated resources are shared links, what a transfer costs when it
is not simulated flow by flow, how the profile is prepared for it, and which closed form the
coarse model uses (``base.Architecture``). A new one is one file here and one line below;
``--arch`` offers whatever is registered.
"""
from __future__ import annotations

from .allreduce import AllReduce
from .base import Architecture
from .ps import ParameterServers

ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (ParameterServers(), AllReduce())}

__all__ = ["ARCHITECTURES", "Architecture"]
