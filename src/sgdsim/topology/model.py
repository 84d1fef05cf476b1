"""A cluster as nodes of G devices: an intra-node link per device, one NIC per node."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError

MAX_GPUS_PER_NODE = 64


@dataclass(frozen=True)
class Topology:
    """``nic_Bps``: each node's NIC, per direction; ``intra_link_Bps``: each device's link
    inside its node (NVLink, PCIe), per direction; None when nodes hold one device.
    ``step_latency_s``: the fixed cost α of one step of a ring, on either kind of link."""

    nic_Bps: float
    gpus_per_node: int = 1
    intra_link_Bps: float | None = None
    step_latency_s: float = 0.0

    @property
    def intra_Bps(self) -> float:
        if self.intra_link_Bps is None:
            raise ConfigError("nodes of one device have no intra-node link")
        return self.intra_link_Bps

    def __post_init__(self):
        if not 1 <= self.gpus_per_node <= MAX_GPUS_PER_NODE:
            raise ConfigError(f"--gpus-per-node must be from 1 to {MAX_GPUS_PER_NODE}, "
                              f"got {self.gpus_per_node}")
        if self.gpus_per_node > 1 and self.intra_link_Bps is None:
            raise ConfigError("--gpus-per-node above 1 needs --intra-bandwidth (e.g. 150GB/s for "
                              "NVLink, 12GB/s for PCIe 3 x16)")
        if not (self.nic_Bps > 0 and (self.intra_link_Bps is None or self.intra_link_Bps > 0)):
            raise ConfigError("bandwidths must be positive")

    def layout(self, ranks: int) -> tuple[int, int]:
        """(nodes, devices per node) of ``ranks`` devices: full nodes, or one node partly used."""
        G = self.gpus_per_node
        if ranks <= G:
            return 1, ranks
        if not fills_nodes(ranks, G):
            raise ConfigError(f"{ranks} workers do not fill nodes of {G} devices (--gpus-per-node "
                              f"{G}): give multiples of {G}")
        return ranks // G, G

    def nodes(self, ranks: int) -> int:
        return math.ceil(ranks / self.gpus_per_node)


def fills_nodes(ranks: int, gpus_per_node: int) -> bool:
    """Whole nodes of ``gpus_per_node`` devices, or part of one node."""
    return ranks <= gpus_per_node or ranks % gpus_per_node == 0
