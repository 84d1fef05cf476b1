"""Flat ring all-reduce over every device (NCCL's ring, gloo's ring).

The ring visits the devices node by node, so each node has one ring edge out through its
NIC and G−1 edges over intra-node links. A call is 2(n−1) steps (reduce-scatter, then
all-gather) moving size/n bytes over every edge at once; a step lasts as long as its slowest
edge, plus the fixed cost α. With one device per node this is TPDS Eq. 11."""
from __future__ import annotations

from ..model import Topology


def ring_call_s(size_bytes, ranks: int, link_Bps: float, step_latency_s: float = 0.0):
    """One ring all-reduce call: 2(N−1) steps, each moving size/N bytes over every rank's link
    (TPDS Eq. 11, §3.2.2) and paying a fixed latency (``netbench --gloo`` measures it)."""
    steps = 2.0 * (ranks - 1)
    return steps / ranks * size_bytes / link_Bps + steps * step_latency_s


def slowest_link_Bps(ranks: int, topology: Topology) -> float:
    """The slowest link a collective over every device crosses: the NIC between nodes, the
    intra-node link inside one node, the slower of the two when it spans nodes of several."""
    nodes, per_node = topology.layout(ranks)
    if per_node == 1:
        return topology.nic_Bps
    if nodes == 1:
        return topology.intra_Bps
    return min(topology.nic_Bps, topology.intra_Bps)


def call_s(size_bytes, ranks: int, topology: Topology):
    return ring_call_s(size_bytes, ranks, slowest_link_Bps(ranks, topology), topology.step_latency_s)
