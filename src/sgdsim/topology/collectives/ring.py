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


def call_s(size_bytes, ranks: int, topology: Topology):
    nodes, per_node = topology.layout(ranks)
    if per_node == 1:
        slowest = topology.nic_Bps
    elif nodes == 1:
        slowest = topology.intra_Bps
    else:
        slowest = min(topology.nic_Bps, topology.intra_Bps)
    return ring_call_s(size_bytes, ranks, slowest, topology.step_latency_s)
