"""Hierarchical all-reduce (Horovod's hierarchical mode, NCCL's 2-D ring).

Three stages: a reduce-scatter inside each node (G−1 steps of size/G over the intra-node
links), an all-reduce between nodes of each device's 1/G shard (G rings of N nodes at once,
which share the node's NIC: each ring step puts G·size/(G·N) = size/N bytes through it, for
2(N−1) steps), and an all-gather inside each node (G−1 steps again). Every step also costs α.
One node: 2(G−1)/G·size/B_intra; one device per node: the flat ring (TPDS Eq. 11)."""
from __future__ import annotations

from ..model import Topology


def call_s(size_bytes, ranks: int, topology: Topology):
    nodes, G = topology.layout(ranks)
    alpha = topology.step_latency_s
    intra = 0.0 if G == 1 else 2.0 * (G - 1) * (size_bytes / G / topology.intra_Bps + alpha)
    inter = 2.0 * (nodes - 1) * (size_bytes / nodes / topology.nic_Bps + alpha)
    return intra + inter
