"""Double binary tree all-reduce (NCCL ≥ 2.4; Sanders, Speck & Träff, "Two-tree algorithms
for full bandwidth broadcast, reduction and scan", Parallel Computing 35(12), 2009).

The data is split in two halves, each reduced up one binary tree and broadcast back down it,
pipelined in chunks. The trees are complementary: a rank that is interior in one is a leaf in
the other, so each rank sends S/2 up each tree (S in all) in the reduce phase and S/2 to each
of its two children in its interior tree (S) in the broadcast phase, and receives as much;
through a link of B bytes/s per direction that is 2·S/B, whether the phases run one after the
other or overlap (the link then carries both). NCCL's tuning model says the same: tree
algorithm bandwidth = ½·bus bandwidth (``src/graph/tuning.cc``), time = 2·S/B.

Latency: a pipelined chunk crosses every level going up and again coming down. NCCL's tree
(``ncclGetBtree``) roots rank 0 with one child, the largest power of two below n, so its height
is 1 + ⌊log2(n−1)⌋ = ⌈log2 n⌉, and the mirrored/shifted second tree has the same height:
2·⌈log2 n⌉·α. So for n ≥ 2 ranks

    t(S, n) = 2·⌈log2 n⌉·α + 2·S/B,

against the ring's 2(n−1)·α + 2(n−1)/n·S/B: far fewer latency steps at large n, a bandwidth
term n/(n−1) times the ring's. One rank makes no transfer: 0. B is the slowest link a tree edge
crosses, chosen as the flat ring chooses it (the trees span devices of every node).
"""
from __future__ import annotations

from ..model import Topology
from .ring import slowest_link_Bps


def tree_call_s(size_bytes, ranks: int, link_Bps: float, step_latency_s: float = 0.0):
    """One double-binary-tree all-reduce over ``ranks`` through links of ``link_Bps``."""
    if ranks <= 1:
        return 0.0 * size_bytes  # keeps the shape of a vector of sizes
    height = (ranks - 1).bit_length()  # ⌈log2 n⌉ in integers: float log2 may round at 2^k
    return 2.0 * height * step_latency_s + 2.0 * size_bytes / link_Bps


def call_s(size_bytes, ranks: int, topology: Topology):
    # the ring's choice of link, so that the two compare on the same cluster
    return tree_call_s(size_bytes, ranks, slowest_link_Bps(ranks, topology), topology.step_latency_s)
