"""Multi-device nodes, collectives and DDP buckets (issue 12). Oracles: TPDS Eq. 11 (one device
per node), 2(G−1)/G·M/B_intra (one node), hand-computed stage sums and timelines, DDP's bucket
rule on hand examples and as properties."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import sgdsim
from sgdsim.analytic.coarse_profile import from_profile
from sgdsim.analytic.sync import ring_allreduce, ring_allreduce_s
from sgdsim.errors import ConfigError
from sgdsim.topology import Topology, allreduce_s, bucket_sizes, even_buckets, with_buckets
from sgdsim.topology.buckets import DDP_FIRST_BUCKET_BYTES

from conftest import layered_profile

MiB = 2.0**20


@settings(max_examples=60, deadline=None)
@given(size=st.floats(1.0, 1e10), ranks=st.integers(1, 512), Bps=st.floats(1e3, 1e12),
       alpha=st.floats(0.0, 1e-2), collective=st.sampled_from(["ring", "hierarchical"]))
def test_one_device_per_node_is_tpds_eq_11(size, ranks, Bps, alpha, collective):
    got = allreduce_s(collective, [size], ranks, Topology(Bps, 1, None, alpha))[0]
    assert got == pytest.approx(ring_allreduce_s([size], ranks, Bps, alpha)[0], rel=1e-12)


@pytest.mark.parametrize("collective", ["ring", "hierarchical"])
@pytest.mark.parametrize("G", [2, 4, 8])
def test_one_node_is_2_g_minus_1_over_g_m_over_b_intra(collective, G):
    M, intra, alpha = 100e6, 150e9, 5e-6
    topo = Topology(nic_Bps=1e9, gpus_per_node=G, intra_link_Bps=intra, step_latency_s=alpha)
    want = 2 * (G - 1) / G * M / intra + 2 * (G - 1) * alpha
    assert allreduce_s(collective, [M], G, topo)[0] == pytest.approx(want, rel=1e-12)


def test_two_nodes_of_four_hand_computed():
    topo = Topology(nic_Bps=1e8, gpus_per_node=4, intra_link_Bps=1e9, step_latency_s=1e-5)
    M = 8e6
    intra = 2 * 3 * (M / 4 / 1e9 + 1e-5)  # reduce-scatter and all-gather inside the node
    inter = 2 * 1 * (M / 2 / 1e8 + 1e-5)  # 4 shard rings of 2 nodes share the NIC
    assert allreduce_s("hierarchical", [M], 8, topo)[0] == pytest.approx(intra + inter, rel=1e-12)
    flat = 14 * (M / 8 / 1e8 + 1e-5)  # 14 steps, each as slow as the NIC edge
    assert allreduce_s("ring", [M], 8, topo)[0] == pytest.approx(flat, rel=1e-12)


def test_zero_bytes_make_no_call_and_layouts_are_checked():
    topo = Topology(1e9 / 8, 8, 1e11 / 8)
    assert allreduce_s("hierarchical", [0.0], 16, topo)[0] == 0.0
    assert topo.layout(4) == (1, 4) and topo.layout(64) == (8, 8)
    with pytest.raises(ConfigError, match="multiples of 8"):
        topo.layout(12)
    with pytest.raises(ConfigError, match="--intra-bandwidth"):
        Topology(1e9 / 8, 2)


def test_ddp_bucket_rule_hand_example():
    # gradient-ready order; first bucket closes at >= 1 MiB, then at >= cap
    sizes = [0.5 * MiB, 0.6 * MiB, 10 * MiB, 20 * MiB, 1 * MiB, 30 * MiB, 0.1 * MiB]
    assert bucket_sizes(sizes, 25 * MiB) == [[0, 1], [2, 3], [4, 5], [6]]
    assert bucket_sizes(sizes, 25 * MiB, first_cap_bytes=25 * MiB) == [[0, 1, 2, 3], [4, 5], [6]]


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.floats(0, 64 * MiB), min_size=1, max_size=40), cap=st.floats(1e3, 64 * MiB))
def test_bucket_rule_properties(sizes, cap):
    buckets = bucket_sizes(sizes, cap)
    assert [i for b in buckets for i in b] == list(range(len(sizes)))  # in order, each once
    for k, b in enumerate(buckets):
        limit = min(DDP_FIRST_BUCKET_BYTES, cap) if k == 0 else cap
        if k < len(buckets) - 1:
            assert sum(sizes[i] for i in b) >= limit  # only a full bucket closes
        assert sum(sizes[i] for i in b[:-1]) < limit  # it closes as soon as it is full


@settings(max_examples=60, deadline=None)
@given(M=st.floats(0, 1e12), cap=st.floats(1.0, 1e11))
def test_even_buckets_cover_the_model(M, cap):
    sizes, counts = even_buckets(M, cap)
    assert float(np.dot(sizes, counts)) == pytest.approx(M, rel=1e-9, abs=1e-3)
    assert (sizes[counts > 0] <= cap * (1 + 1e-12)).all()


FWD, BWD = [0.010, 0.020, 0.030], [0.040, 0.030, 0.020]
SIZES = [0.6 * MiB, 0.6 * MiB, 3 * MiB]  # ready order L2, L1, L0: buckets [L2], [L1, L0]


def test_with_buckets_structure():
    prof = with_buckets(layered_profile(SIZES, FWD, BWD, overlap=True), 2 * MiB)
    buckets = [op for op in prof.ops if op.id.startswith("bucket:")]
    assert [b.size_bytes for b in buckets] == [3 * MiB, 1.2 * MiB]
    assert set(buckets[0].deps) == {"bwd:L2"}
    assert set(buckets[1].deps) == {"bwd:L1", "bwd:L0", "bucket:0"}  # one call at a time
    assert not any(op.id.startswith("up:") for op in prof.ops)
    for op in prof.ops:
        if op.id.startswith("upd:"):
            assert op.deps == ("bucket:1",)  # the optimizer waits for the last bucket
    assert prof.extra["transforms"][-1]["buckets"] == 2


@pytest.mark.parametrize("G,collective", [(1, "ring"), (4, "ring"), (4, "hierarchical")])
def test_bucketed_overlapping_step_is_the_hand_placed_timeline(G, collective):
    n, Bps, intra = 8, 1e9 / 8, 10e9 / 8
    topo = Topology(Bps, G, intra if G > 1 else None)
    call = lambda size: allreduce_s(collective, [size], n, topo)[0]  # noqa: E731
    F = sum(FWD)
    ready0, ready1 = F + BWD[2], F + sum(BWD)  # bucket 0 = [L2], bucket 1 = [L1, L0]
    end0 = ready0 + call(3 * MiB)
    step = max(ready1, end0) + call(1.2 * MiB)
    prof = layered_profile(SIZES, FWD, BWD, overlap=True, batch=32)
    pt = sgdsim.predict(prof, workers=n, bandwidth=1e9, mode="sync", arch="allreduce",
                        collective=collective, gpus_per_node=G,
                        intra_bandwidth="10Gbps" if G > 1 else None, bucket_size="2MiB",
                        steps=3, warmup=1, replications=1)[0]
    assert pt.step_time_s == pytest.approx(step, rel=1e-9)


def test_no_overlap_one_bucket_is_the_hand_sum_and_the_coarse_model_agrees():
    n, Bps = 16, 10e9 / 8
    topo = Topology(Bps, 8, 150e9)  # 150GB/s
    sizes = [40 * MiB, 30 * MiB]
    prof = layered_profile(sizes, [0.01, 0.02], [0.03, 0.04], overlap=False, batch=32)
    kw = dict(workers=n, bandwidth="10Gbps", mode="sync", arch="allreduce", collective="hierarchical",
              gpus_per_node=8, intra_bandwidth="150GB/s", bucket_size="1GB")
    # one bucket: the first closes at 1 MiB, and L1's 30 MiB alone passes that; L0 forms the second
    hand = 0.10 + allreduce_s("hierarchical", [30 * MiB], n, topo)[0] \
        + allreduce_s("hierarchical", [40 * MiB], n, topo)[0]
    fine = sgdsim.predict(prof, steps=3, warmup=1, replications=1, **kw)[0]
    assert fine.step_time_s == pytest.approx(hand, rel=1e-9)
    coarse = sgdsim.predict(prof, model="coarse", **kw)[0]  # even buckets: 1 MiB, then the rest
    even = 0.10 + allreduce_s("hierarchical", [1 * MiB, 69 * MiB], n, topo).sum()
    assert coarse.step_time_s == pytest.approx(even, rel=1e-9)


def test_coarse_defaults_are_unchanged_eq_11():
    prof = layered_profile([40 * MiB, 30 * MiB], [0.01, 0.02], [0.03, 0.04], overlap=False)
    c = from_profile(prof)
    old = 0.10 + 2 * ring_allreduce_s([35 * MiB], 4, 1e9 / 8)[0]  # two equal calls
    assert ring_allreduce([(c, 4)], 1e9 / 8).step_time_s == pytest.approx(old, rel=1e-12)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", *args], capture_output=True, text=True)


def test_cli_done_when_command_and_errors():
    base = ["predict", "examples/profiles/resnet50.json", "--arch", "allreduce", "--mode", "sync",
            "--collective", "hierarchical", "--gpus-per-node", "8", "--intra-bandwidth", "150GB/s",
            "--bandwidth", "100Gbps", "--bucket-size", "25MB"]
    r = _cli(*base, "--workers", "8,16,64", "--model", "coarse", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 4
    for extra, msg in ((["--workers", "12"], "multiples of 8"),):
        r = _cli(*base, *extra, "--model", "coarse")
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli("predict", "examples/profiles/resnet50.json", "--arch", "allreduce", "--mode", "sync",
             "--gpus-per-node", "2", "--workers", "4", "--model", "coarse")
    assert r.returncode == 2 and "--intra-bandwidth" in r.stderr
    r = _cli("predict", "examples/profiles/resnet50.json", "--collective", "hierarchical",
             "--workers", "4", "--model", "coarse")
    assert r.returncode == 2 and "--arch allreduce" in r.stderr


def test_local_aggregation_hand_computed():
    from sgdsim.topology.local import with_local_aggregation
    G, intra, alpha = 4, 10e9, 1e-5
    topo = Topology(1e9, G, intra, alpha)
    sizes = [40 * MiB, 30 * MiB]
    prof = layered_profile(sizes, [0.01, 0.02], [0.03, 0.04], overlap=True, batch=32)
    node = with_local_aggregation(prof, topo)
    assert node.job.batch_size == 4 * 32
    added = dict(zip([op.id for op in node.ops], node.durations_s[0] - prof.durations_s[0]))
    ar = lambda m: 2 * (G - 1) * (m / G / intra + alpha)  # noqa: E731 (ring inside the node)
    bc = lambda m: m / intra + (G - 1) * alpha  # noqa: E731 (pipelined broadcast)
    assert added["bwd:L1"] == pytest.approx(ar(30 * MiB)) and added["bwd:L0"] == pytest.approx(ar(40 * MiB))
    assert added["fwd:L1"] == pytest.approx(bc(30 * MiB)) and added["fwd:L0"] == pytest.approx(bc(40 * MiB))


def test_ps_with_multi_gpu_nodes_is_nodes_of_aggregated_workers():
    from sgdsim.topology.local import with_local_aggregation
    prof = layered_profile([40 * MiB, 30 * MiB], [0.01, 0.02], [0.03, 0.04], overlap=False, batch=32)
    kw = dict(bandwidth="25Gbps", mode="sync", arch="ps", steps=3, warmup=1, replications=1)
    devices = sgdsim.predict(prof, workers="8,16", gpus_per_node=8, intra_bandwidth="150GB/s",
                             model="all", **kw)
    node = with_local_aggregation(prof, Topology(25e9 / 8, 8, 150e9))  # 25 Gbit/s, 150 GB/s
    nodes = sgdsim.predict(node, workers="1,2", model="all", **kw)
    assert [p.workers for p in devices] == [8 * p.workers for p in nodes]
    for d, n in zip(devices, nodes):
        assert d.model == n.model and d.throughput == pytest.approx(n.throughput, rel=1e-12)
    coarse = [p for p in devices if p.model == "coarse"]  # TPDS Eq. 9 on the node's profile, by hand
    ar = 2 * 7 * (70 * MiB / 8 / 150e9)  # both layers' local all-reduces, one after the other
    bc = 70 * MiB / 150e9
    MB = 70 * MiB / (25e9 / 8)
    for p, K in zip(coarse, (1, 2)):
        step = 0.10 + ar + bc + K * MB + (0.5 * K * MB + 0.5 * MB)
        assert p.step_time_s == pytest.approx(step, rel=1e-9)
        assert p.throughput == pytest.approx(K * 8 * 32 / step, rel=1e-9)
