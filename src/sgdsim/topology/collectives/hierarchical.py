"""Hierarchical all-reduce (Horovod's hierarchical mode, NCCL's 2-D ring).

Three stages: a reduce-scatter inside each node (G−1 steps of size/G over the intra-node
links), an all-reduce between nodes of each device's 1/G shard (G rings of N nodes at once,
which share the node's NIC: each ring step puts G·size/(G·N) = size/N bytes through it, for
2(N−1) steps), and an all-gather inside each node (G−1 steps again). Every step also costs α.
One node: 2(G−1)/G·size/B_intra; one device per node: the flat ring (TPDS Eq. 11)."""
from __future__ import annotations

from ..model import Topology
from .ring import ring_call_s


def call_s(size_bytes, ranks: int, topology: Topology):
    """The two intra-node stages are a ring of G over the intra links; the G shard rings of N
    nodes together move what one ring of N moves over the NIC."""
    nodes, G = topology.layout(ranks)
    alpha = topology.step_latency_s
    intra = 0.0 if G == 1 else ring_call_s(size_bytes, G, topology.intra_Bps, alpha)
    return intra + ring_call_s(size_bytes, nodes, topology.nic_Bps, alpha)
