"""Architectures: how a step's transfers map onto the cluster, one file each.

An architecture says which simulated resources are shared links, what a transfer costs when it
is not simulated flow by flow, how the profile is prepared for it, and which closed form the
coarse model uses (``base.Architecture``). A new one is one file here and one line below;
``--arch``, the checks and the planner's search space read the registry.
"""
from __future__ import annotations

from ..spec.registries import ARCHITECTURES
from .allreduce import AllReduce
from .base import Architecture
from .colocated import ColocatedShards
from .ps import ParameterServers

for _arch in (ParameterServers(), AllReduce(), ColocatedShards()):
    ARCHITECTURES.register(_arch.name, _arch)

__all__ = ["ARCHITECTURES", "Architecture"]
