"""Double binary tree all-reduce ("tree"). Oracles: the closed form 2·⌈log2 n⌉·α + 2·S/B
computed by hand, NCCL's tree-neighbour rule (``ncclGetBtree``, ported below) for the height
⌈log2 n⌉, the ring's closed form (TPDS Eq. 11) for the comparisons, and a step of compute then
communication in sequence for the end-to-end predictions."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

import sgdsim
from sgdsim.topology import Topology, allreduce_s

HEIGHT = {1: 0, 2: 1, 3: 2, 8: 3, 1000: 10}  # ⌈log2 n⌉: 2^9 = 512 < 1000 ≤ 1024 = 2^10


def tree(S, n, alpha, B):
    return 0.0 if n == 1 else 2 * HEIGHT.get(n, math.ceil(math.log2(n))) * alpha + 2 * S / B


def ring(S, n, alpha, B):
    return 2 * (n - 1) * (S / (n * B) + alpha)


@pytest.mark.parametrize("n", sorted(HEIGHT))
@pytest.mark.parametrize("S", [1.0, 4096.0, 25e6, 3e9])
@pytest.mark.parametrize("alpha", [0.0, 5e-6, 2e-3])
def test_one_device_per_node_is_the_closed_form(n, S, alpha):
    B = 1.25e9  # 10 Gb/s
    got = allreduce_s("tree", [S], n, Topology(B, 1, None, alpha))[0]
    assert got == pytest.approx(tree(S, n, alpha, B), rel=1e-12)


@pytest.mark.parametrize("n,nic,intra,link", [
    (8, 1.25e9, 150e9, 1.25e9),  # two nodes of 4, NVLink inside: the NIC is slowest
    (8, 12.5e9, 2e9, 2e9),  # two nodes of 4, slow PCIe inside and a fast NIC: PCIe is slowest
    (4, 1.25e9, 150e9, 150e9),  # one node: intra-node links only
    (2, 1.25e9, 150e9, 150e9),  # part of one node
])
def test_several_devices_per_node_use_the_slowest_link(n, nic, intra, link):
    S, alpha = 64e6, 1e-5
    topo = Topology(nic, 4, intra, alpha)
    assert allreduce_s("tree", [S], n, topo)[0] == pytest.approx(tree(S, n, alpha, link), rel=1e-12)
    assert allreduce_s("tree", [0.0], n, topo)[0] == 0.0  # no call


def _nccl_btree_parent(nranks: int, rank: int) -> int:
    """``ncclGetBtree``'s parent rule (NCCL src/graph/trees.cc): root 0."""
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1
    up = (rank ^ bit) | (bit << 1)
    return up if up < nranks else rank ^ bit


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 9, 14, 16, 17, 100, 1000, 1024, 1025])
def test_nccl_tree_height_is_ceil_log2_n(n):
    def depth(r):
        d = 0
        while r != 0:
            r, d = _nccl_btree_parent(n, r), d + 1
        return d
    assert max(depth(r) for r in range(n)) == math.ceil(math.log2(n))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(16, 4096), alpha=st.floats(1e-6, 1e-2), B=st.floats(1e6, 1e11),
       frac=st.floats(0.0, 1.0))
def test_small_messages_tree_beats_ring_at_large_n(n, alpha, B, frac):
    S = frac * alpha * B + 1.0  # below the bandwidth-delay product: latency-bound
    topo = Topology(B, 1, None, alpha)
    t, r = allreduce_s("tree", [S], n, topo)[0], allreduce_s("ring", [S], n, topo)[0]
    assert t < r
    # latency: log2(n) steps against 2(n−1), up to the small bandwidth terms
    assert t - 2 * S / B == pytest.approx(2 * math.ceil(math.log2(n)) * alpha, rel=1e-9)
    assert r - ring(S, n, 0.0, B) == pytest.approx(2 * (n - 1) * alpha, rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 4096), alpha=st.floats(0.0, 1e-3), B=st.floats(1e6, 1e11))
def test_large_messages_tree_is_within_n_over_n_minus_1_of_ring(n, alpha, B):
    S = 1e5 * n * alpha * B + 1e3 * B  # bandwidth-bound
    topo = Topology(B, 1, None, alpha)
    t, r = allreduce_s("tree", [S], n, topo)[0], allreduce_s("ring", [S], n, topo)[0]
    bound = 2 * n / (2 * (n - 1))  # 2S/B against 2(n−1)S/(nB)
    assert r * (1 - 1e-9) <= t <= r * bound * (1 + 1e-12)
    assert t / r == pytest.approx(bound, rel=1e-4)


SIZE, FWD, BWD, BATCH, ALPHA, B = 100e6, 0.010, 0.020, 32, 1e-3, 10e9 / 8
COARSE = "size=100MB,fwd=10ms,bwd=20ms,batch=32"


def _closed_form_throughput(W):
    # a coarse profile has no overlap: forward, backward, then one all-reduce of the model
    return BATCH * W / (FWD + BWD + tree(SIZE, W, ALPHA, B))


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_predict_is_compute_then_tree(model):
    kw = dict(steps=20, replications=1, model_error=0) if model == "fine" else {}
    pts = sgdsim.predict(None, coarse=COARSE, workers=[2, 4, 8], arch="allreduce", mode="sync",
                         collective="tree", bandwidth="10Gbps", ring_latency="1ms", model=model, **kw)
    assert [p.workers for p in pts] == [2, 4, 8]
    for p in pts:
        assert p.throughput == pytest.approx(_closed_form_throughput(p.workers), rel=0.01)


def test_cli_unknown_collective_lists_the_known_ones():
    r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", "--coarse", COARSE,
                        "--arch", "allreduce", "--mode", "sync", "--collective", "bogus",
                        "--workers", "2"], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and all(c in lines[0] for c in ("ring", "hierarchical", "tree"))
