"""A cluster as nodes of G devices: an intra-node link per device, one NIC per node."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError

MAX_GPUS_PER_NODE = 64


@dataclass(frozen=True)
class Topology:
    """``nic_bps``: each node's NIC, per direction; ``intra_bps``: each device's link inside its
    node (NVLink, PCIe), per direction; None when nodes hold one device. ``step_latency_s``:
    the fixed cost α of one step of a ring, on either kind of link. Units: bits/s (the
    project's bandwidth unit; the collectives divide bytes by ``nic_Bps``/``intra_Bps``), s."""

    nic_bps: float
    gpus_per_node: int = 1
    intra_bps: float | None = None
    step_latency_s: float = 0.0

    @property
    def nic_Bps(self) -> float:
        return self.nic_bps / 8.0

    @property
    def intra_Bps(self) -> float:
        if self.intra_bps is None:
            raise ConfigError("nodes of one device have no intra-node link")
        return self.intra_bps / 8.0

    def __post_init__(self):
        if not 1 <= self.gpus_per_node <= MAX_GPUS_PER_NODE:
            raise ConfigError(f"--gpus-per-node must be from 1 to {MAX_GPUS_PER_NODE}, "
                              f"got {self.gpus_per_node}")
        if self.gpus_per_node > 1 and self.intra_bps is None:
            raise ConfigError("--gpus-per-node above 1 needs --intra-bandwidth (e.g. 150GB/s for "
                              "NVLink, 12GB/s for PCIe 3 x16)")
        if not (self.nic_bps > 0 and (self.intra_bps is None or self.intra_bps > 0)):
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
