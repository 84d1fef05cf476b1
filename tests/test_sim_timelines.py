"""Hand-computed timelines on tiny DAGs: exact start and end of every chunk.

Bandwidths are chosen so that 1 MB takes 1 s (B = 1e6 bytes/s) unless said otherwise; sizes
are then seconds of exclusive transfer. Timeline resources with one PS are ``worker``,
``downlink``, ``uplink``, ``ps``.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import (approx, build_profile, chunks, comm, compute, layered_profile,
                      op_chunks, run_sim)
from sgdsim.sim import WorkerClass
from sgdsim.sim.plan import assign_ps

MB = 1e6
B = 1e6  # bytes/s: 1 MB per second


def _table(result, worker=0, step=None):
    """{op id: [(start, end), ...]} of one worker (one step, or all)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for c in chunks(result):
        if c.worker == worker and (step is None or c.step == step):
            out.setdefault(c.op, []).append((c.start, c.end))
    return out


def _assert_table(result, expected, worker=0, step=None, shift=0.0):
    got = _table(result, worker, step)
    assert sorted(got) == sorted(expected)
    for op, spans in expected.items():
        want = [(a + shift, b + shift) for a, b in spans]
        assert got[op] == [approx(s) for s in want], op


# ----------------------------------------------------------------------------- one worker

CHAIN = dict(sizes=[2 * MB, 1 * MB], fwd=[0.5, 1.5], bwd=[1.0, 0.25], upd=[0.75, 0.5])

CHAIN_OVERLAP = {  # per-layer pipelining: fwd:L waits for its own downlink only
    "down:L0": [(0.0, 2.0)], "down:L1": [(2.0, 3.0)],
    "fwd:L0": [(2.0, 2.5)], "fwd:L1": [(3.0, 4.5)],
    "bwd:L1": [(4.5, 4.75)], "bwd:L0": [(4.75, 5.75)],
    "up:L1": [(4.75, 5.75)], "up:L0": [(5.75, 7.75)],
    "upd:L1": [(5.75, 6.25)], "upd:L0": [(7.75, 8.5)],
}
CHAIN_NO_OVERLAP = {  # all downlinks before the first forward, uplinks after the last backward
    "down:L0": [(0.0, 2.0)], "down:L1": [(2.0, 3.0)],
    "fwd:L0": [(3.0, 3.5)], "fwd:L1": [(3.5, 5.0)],
    "bwd:L1": [(5.0, 5.25)], "bwd:L0": [(5.25, 6.25)],
    "up:L1": [(6.25, 7.25)], "up:L0": [(7.25, 9.25)],
    "upd:L1": [(7.25, 7.75)], "upd:L0": [(9.25, 10.0)],
}


@pytest.mark.parametrize("overlap,expected,step_s", [(True, CHAIN_OVERLAP, 8.5),
                                                     (False, CHAIN_NO_OVERLAP, 10.0)])
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_two_layer_chain_one_worker(overlap, expected, step_s, mode):
    p = layered_profile(**CHAIN, overlap=overlap, batch=32)
    r = run_sim(p, Bps=B, steps=3, mode=mode)
    for k in range(3):  # every step repeats the first one, back to back
        _assert_table(r, expected, step=k, shift=k * step_s)
    res = {c.op: c.resource for c in chunks(r)}
    assert res == {**{f"down:L{i}": "downlink" for i in (0, 1)},
                   **{f"up:L{i}": "uplink" for i in (0, 1)},
                   **{f"upd:L{i}": "ps" for i in (0, 1)},
                   **{f"{d}:L{i}": "worker" for i in (0, 1) for d in ("fwd", "bwd")}}
    assert r.throughput == approx(32 / step_s)
    assert r.step_time_s == approx(step_s)


# ----------------------------------------------------------------------------- PS sharing

def test_two_workers_share_a_link_at_half_rate_each():
    p = layered_profile([3 * MB], [1.0], [0.5], overlap=True)
    r = run_sim(p, workers=2, Bps=B, steps=2, mode="sync", sharing="ps")
    step0 = {"down:L0": [(0.0, 6.0)], "fwd:L0": [(6.0, 7.0)], "bwd:L0": [(7.0, 7.5)],
             "up:L0": [(7.5, 13.5)], "upd:L0": [(13.5, 13.5)]}
    for w in (0, 1):
        _assert_table(r, step0, worker=w, step=0)
        _assert_table(r, step0, worker=w, step=1, shift=13.5)


def test_two_workers_two_layers_processor_sharing_vs_fcfs():
    """PS: both workers' chunks progress together. FCFS: worker 0 keeps the link for both
    of its chunks (it stays active while it has chunks queued), then worker 1 gets it."""
    ops = [comm("down:a", "downlink", 1 * MB), comm("down:b", "downlink", 2 * MB),
           compute("fwd", ["down:a", "down:b"])]
    p = build_profile(ops, {"fwd": 0.5})
    ps = run_sim(p, workers=2, Bps=B, mode="sync", sharing="ps")
    for w in (0, 1):
        _assert_table(ps, {"down:a": [(0.0, 2.0)], "down:b": [(2.0, 6.0)], "fwd": [(6.0, 6.5)]},
                      worker=w)
    fc = run_sim(p, workers=2, Bps=B, mode="sync", sharing="fcfs")
    assert op_chunks(fc, "down:a", 0) == [approx((0.0, 1.0))]
    assert op_chunks(fc, "down:b", 0) == [approx((1.0, 3.0))]
    assert op_chunks(fc, "fwd", 0) == [approx((3.0, 3.5))]
    assert [e for _, e in op_chunks(fc, "down:a", 1)] == [approx(4.0)]
    assert op_chunks(fc, "down:b", 1) == [approx((4.0, 6.0))]
    assert op_chunks(fc, "fwd", 1) == [approx((6.0, 6.5))]


def _hetero(profile_fast, profile_slow, n_fast=1, n_slow=1):
    return [WorkerClass("fast", profile_fast, n_fast), WorkerClass("slow", profile_slow, n_slow)]


def test_flow_joining_mid_transfer_processor_sharing():
    """Worker 0 starts its 3 MB upload at 7 s alone, worker 1 joins at 8 s: 1 MB sent alone,
    then 2 MB at half rate (until 12 s), then worker 1's last 1 MB alone (until 13 s)."""
    fast = layered_profile([3 * MB], [1.0], [0.0], overlap=True)
    slow = layered_profile([3 * MB], [2.0], [0.0], overlap=True)
    r = run_sim(None, classes=_hetero(fast, slow), Bps=B, steps=2, mode="sync", sharing="ps")
    _assert_table(r, {"down:L0": [(0.0, 6.0)], "fwd:L0": [(6.0, 7.0)], "bwd:L0": [(7.0, 7.0)],
                      "up:L0": [(7.0, 12.0)], "upd:L0": [(12.0, 12.0)]}, worker=0, step=0)
    _assert_table(r, {"down:L0": [(0.0, 6.0)], "fwd:L0": [(6.0, 8.0)], "bwd:L0": [(8.0, 8.0)],
                      "up:L0": [(8.0, 13.0)], "upd:L0": [(13.0, 13.0)]}, worker=1, step=0)
    # the barrier: both start step 1 when the slower one is done
    assert op_chunks(r, "down:L0", 0, step=1) == [approx((13.0, 19.0))]
    assert op_chunks(r, "down:L0", 1, step=1) == [approx((13.0, 19.0))]
    assert r.timeline.worker_class == ("fast", "slow")


def _async_join_expected(a, c, S):
    """End times of two transfers of S bytes started at a <= c < a + S/B on a PS-shared link:
    the first sends B·(c - a) alone, then both share B until the first is done, then the
    second sends its last B·(c - a) alone."""
    d = c - a
    first = c + 2 * (S - B * d) / B
    return first, first + d


def test_async_offsets_and_flow_joining_mid_transfer():
    S = 4 * MB
    p = layered_profile([S], [1.0], [0.0], overlap=True)
    step_s = 1.0 + 2 * S / B
    joined = 0
    for seed in range(6):
        r = run_sim(p, workers=2, Bps=B, steps=1, mode="async", sharing="ps", seed=seed)
        (s0, e0), = op_chunks(r, "down:L0", 0, step=0)
        (s1, e1), = op_chunks(r, "down:L0", 1, step=0)
        assert 0.0 <= s0 < step_s and 0.0 <= s1 < step_s  # random start within one step
        assert s0 != s1
        (first, a, ea), (second, c, ec) = sorted([(0, s0, e0), (1, s1, e1)], key=lambda x: x[1])
        if c - a < S / B:  # the later flow joins mid-transfer
            want_a, want_c = _async_join_expected(a, c, S)
            assert (ea, ec) == (approx(want_a), approx(want_c))
            joined += 1
        else:  # alone at first; the other worker's next step may join it later
            assert ea == approx(a + S / B)
            assert ec >= c + S / B * (1 - 1e-12)
    assert joined >= 1  # at least one seed exercised the mid-transfer join


def test_sync_workers_start_together():
    p = layered_profile([1 * MB], [1.0], [0.0], overlap=True)
    r = run_sim(p, workers=3, Bps=B, steps=1, mode="sync", seed=5)
    starts = [op_chunks(r, "down:L0", w, step=0)[0][0] for w in range(3)]
    assert starts == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- FCFS

def test_fcfs_second_flow_waits_for_the_first():
    """Worker 1's download completes 3 s after worker 0's; on the uplink worker 1 (faster
    compute) arrives first at 7 s, worker 0 arrives at 8 s and is served from 10 s."""
    classes = [WorkerClass("slow", layered_profile([3 * MB], [5.0], [0.0], overlap=True), 1),
               WorkerClass("fast", layered_profile([3 * MB], [1.0], [0.0], overlap=True), 1)]
    r = run_sim(None, classes=classes, Bps=B, steps=1, mode="sync", sharing="fcfs")
    assert [e for _, e in op_chunks(r, "down:L0", 0)] == [approx(3.0)]
    assert [e for _, e in op_chunks(r, "down:L0", 1)] == [approx(6.0)]
    assert op_chunks(r, "fwd:L0", 0) == [approx((3.0, 8.0))]
    assert op_chunks(r, "fwd:L0", 1) == [approx((6.0, 7.0))]
    assert op_chunks(r, "up:L0", 1) == [approx((7.0, 10.0))]
    assert [e for _, e in op_chunks(r, "up:L0", 0)] == [approx(13.0)]
    assert r.step_time_s == approx(13.0)


def test_fcfs_timeline_start_is_service_start():
    p = layered_profile([3 * MB], [1.0], [0.0], overlap=True)
    r = run_sim(p, workers=2, Bps=B, steps=1, mode="sync", sharing="fcfs")
    assert op_chunks(r, "down:L0", 0) == [approx((0.0, 3.0))]
    assert op_chunks(r, "down:L0", 1) == [approx((3.0, 6.0))]


def test_fcfs_with_flow_cap_full_full_partial():
    """B = 2.5·cap: the first two flows get cap, the third the remaining 0.5·cap, a fourth
    waits. When the full flows leave, the partial flow moves up to cap, the waiting one too."""
    cap = 1e6
    p = layered_profile([2 * MB], [1.0], [0.0], overlap=True)
    r = run_sim(p, workers=4, Bps=2.5 * cap, steps=1, mode="sync", sharing="fcfs",
                flow_cap_Bps=cap)
    ends = [op_chunks(r, "down:L0", w)[0][1] for w in range(4)]
    # w0, w1: 2 MB at cap; w2: 1 MB at 0.5·cap by 2 s, then 1 MB at cap; w3: 2 MB at cap from 2 s
    assert ends == [approx(2.0), approx(2.0), approx(3.0), approx(4.0)]
    # uplinks: w0, w1 at cap from 3 s; w2 arrives at 4 s as the partial flow (0.5 MB by 5 s),
    # then 1.5 MB at cap; w3 arrives at 5 s and gets a full slot
    up = [op_chunks(r, "up:L0", w)[0] for w in range(4)]
    assert up[0] == approx((3.0, 5.0)) and up[1] == approx((3.0, 5.0))
    assert up[2] == approx((4.0, 6.5))
    assert up[3] == approx((5.0, 7.0))


def test_fcfs_with_flow_cap_three_flows():
    cap = 1e6
    p = layered_profile([2 * MB], [10.0], [0.0], overlap=True)
    r = run_sim(p, workers=3, Bps=2.5 * cap, steps=1, mode="sync", sharing="fcfs",
                flow_cap_Bps=cap)
    ends = [op_chunks(r, "down:L0", w)[0][1] for w in range(3)]
    assert ends == [approx(2.0), approx(2.0), approx(3.0)]


def test_processor_sharing_with_flow_cap():
    """Three flows on B = 2.5·cap under PS: B/3 < cap, so each gets B/3; two flows would
    get min(cap, B/2) = cap."""
    cap = 1e6
    p = layered_profile([2 * MB], [10.0], [0.0], overlap=True)
    r = run_sim(p, workers=3, Bps=2.5 * cap, steps=1, mode="sync", sharing="ps",
                flow_cap_Bps=cap)
    for w in range(3):
        assert op_chunks(r, "down:L0", w) == [approx((0.0, 3 * 2 * MB / (2.5 * cap)))]
    r2 = run_sim(p, workers=2, Bps=2.5 * cap, steps=1, mode="sync", sharing="ps",
                 flow_cap_Bps=cap)
    for w in range(2):
        assert op_chunks(r2, "down:L0", w) == [approx((0.0, 2.0))]


# ----------------------------------------------------------------------------- streams

def _three_streams():
    ops = [comm("down:A", "downlink", 5 * MB), comm("down:B", "downlink", 2 * MB),
           comm("down:C", "downlink", 4 * MB), compute("fwd", ["down:A", "down:B", "down:C"])]
    return build_profile(ops, {"fwd": 1.0})


def test_http2_window_round_robin():
    """WIN = 3 MB: A(3) B(2) C(3) A(2) C(1), each stream's rest after everyone's first go."""
    r = run_sim(_three_streams(), Bps=B, steps=1, streams="http2", window_bytes=3 * MB)
    link = [(c.op, c.start, c.end) for c in chunks(r) if c.resource == "downlink"]
    assert link == [("down:A", 0.0, approx(3.0)), ("down:B", approx(3.0), approx(5.0)),
                    ("down:C", approx(5.0), approx(8.0)), ("down:A", approx(8.0), approx(10.0)),
                    ("down:C", approx(10.0), approx(11.0))]
    assert op_chunks(r, "fwd") == [approx((11.0, 12.0))]
    assert r.link_bytes["downlink"]["completed_chunks"] == approx(11 * MB)


def test_fifo_sends_whole_streams_in_order():
    r = run_sim(_three_streams(), Bps=B, steps=1, streams="fifo")
    link = [(c.op, c.start, c.end) for c in chunks(r) if c.resource == "downlink"]
    assert link == [("down:A", 0.0, approx(5.0)), ("down:B", approx(5.0), approx(7.0)),
                    ("down:C", approx(7.0), approx(11.0))]


def test_http2_large_window_is_fifo():
    r = run_sim(_three_streams(), Bps=B, steps=1, streams="http2", window_bytes=5 * MB)
    link = [(c.op, c.start, c.end) for c in chunks(r) if c.resource == "downlink"]
    assert link == [("down:A", 0.0, approx(5.0)), ("down:B", approx(5.0), approx(7.0)),
                    ("down:C", approx(7.0), approx(11.0))]


def test_http2_late_stream_goes_before_the_rest_of_an_earlier_one():
    """B arrives at 1 s while A's first 3 MB are on the wire; A's rest goes behind B."""
    ops = [comm("down:A", "downlink", 5 * MB), compute("pre"),
           comm("down:B", "downlink", 2 * MB, ["pre"]), compute("fwd", ["down:A", "down:B"])]
    p = build_profile(ops, {"pre": 1.0, "fwd": 0.5})
    r = run_sim(p, Bps=B, steps=1, streams="http2", window_bytes=3 * MB)
    link = [(c.op, c.start, c.end) for c in chunks(r) if c.resource == "downlink"]
    assert link == [("down:A", 0.0, approx(3.0)), ("down:B", approx(3.0), approx(5.0)),
                    ("down:A", approx(5.0), approx(7.0))]


def test_http2_two_workers_share_per_chunk():
    """Each worker's chunks go one at a time; the two workers' chunks share the link."""
    r = run_sim(_three_streams(), workers=2, Bps=B, steps=1, mode="sync", streams="http2",
                window_bytes=3 * MB)
    for w in (0, 1):
        link = [(c.op, c.start, c.end) for c in chunks(r)
                if c.resource == "downlink" and c.worker == w]
        assert link == [("down:A", 0.0, approx(6.0)), ("down:B", approx(6.0), approx(10.0)),
                        ("down:C", approx(10.0), approx(16.0)),
                        ("down:A", approx(16.0), approx(20.0)),
                        ("down:C", approx(20.0), approx(22.0))]


def _order_chain():
    """Three layers whose downlinks are listed c, a, b in the profile; forwards a -> b -> c."""
    ops = [comm("down:c", "downlink", 1 * MB, layer="c"), comm("down:a", "downlink", 1 * MB, layer="a"),
           comm("down:b", "downlink", 1 * MB, layer="b"),
           compute("fwd:a", ["down:a"], layer="a"), compute("fwd:b", ["fwd:a", "down:b"], layer="b"),
           compute("fwd:c", ["fwd:b", "down:c"], layer="c")]
    return build_profile(ops, {"fwd:a": 0.5, "fwd:b": 0.5, "fwd:c": 0.5})


@pytest.mark.parametrize("order,expected", [
    ("profiled", {"down:c": [(0, 1)], "down:a": [(1, 2)], "down:b": [(2, 3)],
                  "fwd:a": [(2, 2.5)], "fwd:b": [(3, 3.5)], "fwd:c": [(3.5, 4)]}),
    ("reverse", {"down:b": [(0, 1)], "down:a": [(1, 2)], "down:c": [(2, 3)],
                 "fwd:a": [(2, 2.5)], "fwd:b": [(2.5, 3)], "fwd:c": [(3, 3.5)]}),
    ("tic", {"down:a": [(0, 1)], "down:b": [(1, 2)], "down:c": [(2, 3)],
             "fwd:a": [(1, 1.5)], "fwd:b": [(2, 2.5)], "fwd:c": [(3, 3.5)]}),
])
def test_fifo_transmission_order(order, expected):
    r = run_sim(_order_chain(), Bps=B, steps=2, streams="fifo", order=order)
    step = max(e for spans in expected.values() for _, e in spans)
    _assert_table(r, expected, step=0)
    _assert_table(r, expected, step=1, shift=step)


def test_random_order_is_a_seeded_permutation():
    seqs = set()
    for seed in range(8):
        r = run_sim(_order_chain(), Bps=B, steps=1, order="random", seed=seed)
        link = [c for c in chunks(r) if c.resource == "downlink"]
        assert sorted(c.op for c in link) == ["down:a", "down:b", "down:c"]
        assert [(c.start, c.end) for c in link] == [approx((0, 1)), approx((1, 2)), approx((2, 3))]
        again = run_sim(_order_chain(), Bps=B, steps=1, order="random", seed=seed)
        assert [c.op for c in chunks(again)] == [c.op for c in chunks(r)]
        seqs.add(tuple(c.op for c in link))
    assert len(seqs) > 1


# ----------------------------------------------------------------------------- several PS

# ICPE §5 worker-NIC model (sharing "ps"): a worker's concurrent flows to different PS share
# its NIC bandwidth B, water-filling over each PS link's fair share B/n_p.

def test_two_ps_one_worker_shares_its_nic():
    S = 2 * MB
    p = layered_profile([S, S], [1.0, 1.0], [0.0, 0.0], overlap=True, ps=[0, 1])
    r = run_sim(p, Bps=B, steps=1)
    assert r.timeline.resource_names == ("worker", "downlink[0]", "uplink[0]", "ps[0]",
                                         "downlink[1]", "uplink[1]", "ps[1]")
    res = {c.op: c.resource for c in chunks(r)}
    assert res["down:L0"] == "downlink[0]" and res["down:L1"] == "downlink[1]"
    # both downlinks at B/2 each: both end at 2S/B
    assert op_chunks(r, "down:L0") == [approx((0.0, 2 * S / B))]
    assert op_chunks(r, "down:L1") == [approx((0.0, 2 * S / B))]


def _nic_profiles(pre_s):
    """down:b (PS 1) is a root; down:a (PS 0) waits for a compute op of ``pre_s`` seconds."""
    ops = [compute("pre"), comm("down:a", "downlink", 1 * MB, ["pre"], layer="a", ps=0),
           comm("down:b", "downlink", 1 * MB, layer="b", ps=1),
           compute("fwd", ["down:a", "down:b"])]
    return build_profile(ops, {"pre": pre_s, "fwd": 0.5})


def test_two_ps_water_filling_two_workers():
    """w0 talks to PS 0 and PS 1, w1 only to PS 1: PS 1's fair share is B/2; w0's NIC gives
    B/2 to PS 1 and the remaining B - B/2 to PS 0; w1 gets B/2. Everything ends at 2 s."""
    classes = [WorkerClass("both", _nic_profiles(0.0), 1),
               WorkerClass("ps1-only", _nic_profiles(100.0), 1)]
    r = run_sim(None, classes=classes, Bps=B, steps=1, mode="sync")
    assert op_chunks(r, "down:b", 1) == [approx((0.0, 2.0))]
    assert op_chunks(r, "down:b", 0) == [approx((0.0, 2.0))]
    assert op_chunks(r, "down:a", 0) == [approx((0.0, 2.0))]
    # w1's PS 0 transfer later runs alone: full B
    assert op_chunks(r, "down:a", 1) == [approx((100.0, 101.0))]


def test_two_ps_water_filling_three_workers():
    """PS 1 has three flows (fair share B/3); w0's NIC gives B/3 to PS 1 and 2B/3 to PS 0."""
    classes = [WorkerClass("both", _nic_profiles(0.0), 1),
               WorkerClass("ps1-only", _nic_profiles(100.0), 2)]
    r = run_sim(None, classes=classes, Bps=B, steps=1, mode="sync")
    assert op_chunks(r, "down:a", 0) == [approx((0.0, 1.5))]
    for w in range(3):
        assert op_chunks(r, "down:b", w) == [approx((0.0, 3.0))]


def test_two_ps_nic_share_returns_when_a_flow_ends():
    """1 MB to PS 0 and 3 MB to PS 1 at once: B/2 each until 2 s (PS 1 has sent 1 MB), then the
    PS 1 flow gets the whole NIC for its remaining 2 MB: done at 4 s. Same on the uplinks."""
    p = layered_profile([1 * MB, 3 * MB], [0.5, 0.5], [0.5, 0.5], overlap=False, ps=[0, 1])
    r = run_sim(p, Bps=B, steps=2)
    _assert_table(r, {"down:L0": [(0.0, 2.0)], "down:L1": [(0.0, 4.0)],
                      "fwd:L0": [(4.0, 4.5)], "fwd:L1": [(4.5, 5.0)],
                      "bwd:L1": [(5.0, 5.5)], "bwd:L0": [(5.5, 6.0)],
                      "up:L1": [(6.0, 10.0)], "up:L0": [(6.0, 8.0)],
                      "upd:L1": [(10.0, 10.0)], "upd:L0": [(8.0, 8.0)]}, step=0)
    assert op_chunks(r, "down:L1", step=1) == [approx((10.0, 14.0))]
    assert r.utilization["downlink[0]"] + r.utilization["downlink[1]"] <= 1 + 1e-9


@pytest.mark.parametrize("cap_frac,rate_frac", [(0.3, 0.3), (0.8, 0.5)])
def test_two_ps_nic_share_with_flow_cap(cap_frac, rate_frac):
    """Each PS link offers min(cap, B); the NIC splits B: each flow gets min(cap, B/2)."""
    S = 2 * MB
    p = layered_profile([S, S], [1.0, 1.0], [0.0, 0.0], overlap=True, ps=[0, 1])
    r = run_sim(p, Bps=B, steps=1, flow_cap_Bps=cap_frac * B)
    for op in ("down:L0", "down:L1"):
        assert op_chunks(r, op) == [approx((0.0, S / (rate_frac * B)))]


def test_one_ps_profile_unaffected_by_nic_model():
    """With one PS two flows of one worker never coexist on different links: the same chain
    as before gives the same timeline under ps_count=1 and on the single-PS profile."""
    p = layered_profile(**CHAIN, overlap=True, ps=[0, 0])
    r = run_sim(p, Bps=B, steps=1, ps_count=1)
    _assert_table(r, CHAIN_OVERLAP, step=0)


def test_two_ps_rebalance_when_other_workers_join_mid_transfer():
    """w0 pulls 2 MB from PS 0 and 2 MB from PS 1 from 0 s (B/2 each); w1 and w2 join PS 1 at
    1 s: PS 1's fair share drops to B/3, so w0 gets B/3 there and 2B/3 from PS 0.
    w0/PS 0: 0.5 MB + 1.5 MB at 2/3 -> 3.25 s. w0/PS 1: 0.5 + 0.75 MB by 3.25 s, the last
    0.75 MB at 1/3 -> 5.5 s. w1, w2: 1.5 MB at 1/3 by 5.5 s, then B/2 each -> 6.5 s."""
    def prof(p1, p2):
        ops = [compute("p1"), comm("down:b", "downlink", 2 * MB, ["p1"], ps=1),
               compute("p2", ["p1"]), comm("down:a", "downlink", 2 * MB, ["p2"], ps=0),
               compute("fwd", ["down:a", "down:b"])]
        return build_profile(ops, {"p1": p1, "p2": p2, "fwd": 0.5})
    classes = [WorkerClass("both", prof(0.0, 0.0), 1), WorkerClass("late", prof(1.0, 100.0), 2)]
    r = run_sim(None, classes=classes, Bps=B, steps=1, mode="sync")
    assert op_chunks(r, "down:a", 0) == [approx((0.0, 3.25))]
    assert op_chunks(r, "down:b", 0) == [approx((0.0, 5.5))]
    for w in (1, 2):
        assert op_chunks(r, "down:b", w) == [approx((1.0, 6.5))]
        # later, alone with the other on PS 0: B/2 each
        assert op_chunks(r, "down:a", w) == [approx((101.0, 105.0))]


def test_two_ps_nic_is_full_duplex():
    """A download from PS 0 and an upload to PS 1 at the same time each get the full B."""
    ops = [comm("down:a", "downlink", 2 * MB, layer="a", ps=0),
           comm("up:b", "uplink", 2 * MB, layer="b", ps=1),
           compute("fwd", ["down:a", "up:b"])]
    r = run_sim(build_profile(ops, {"fwd": 0.5}), Bps=B, steps=1)
    assert op_chunks(r, "down:a") == [approx((0.0, 2.0))]
    assert op_chunks(r, "up:b") == [approx((0.0, 2.0))]


def test_assign_ps_least_loaded_by_bytes():
    # layer bytes 5, 3, 4, (none), 1, 2 MB -> loads [5,0] [5,3] [5,7] [6,7] [8,7]
    p = layered_profile([5 * MB, 3 * MB, 4 * MB, 0.0, 1 * MB, 2 * MB], [0.1] * 6, [0.1] * 6,
                        overlap=True)
    owner = {"L0": 0, "L1": 1, "L2": 1, "L4": 0, "L5": 0}
    got = assign_ps(p, 2)
    assert got.dtype.kind == "i" and len(got) == p.n_ops
    for op, ps in zip(p.ops, got.tolist()):
        assert ps == (owner[op.layer] if op.resource != "worker" else 0), op.id
    # ties go to the lowest index
    q = layered_profile([MB, MB, MB], [0.1] * 3, [0.1] * 3, overlap=True)
    by_layer = lambda arr: {op.layer: int(x) for op, x in zip(q.ops, arr) if op.resource == "downlink"}
    assert by_layer(assign_ps(q, 3)) == {"L0": 0, "L1": 1, "L2": 2}
    assert by_layer(assign_ps(q, 2)) == {"L0": 0, "L1": 1, "L2": 0}
    assert set(assign_ps(q, 1).tolist()) == {0}


def test_ps_count_option_reassigns_layers_in_simulation():
    p = layered_profile([5 * MB, 3 * MB, 4 * MB], [0.1] * 3, [0.1] * 3, overlap=True,
                        ps=[0, 0, 0])
    r = run_sim(p, Bps=B, steps=1, ps_count=2)
    tl = r.timeline
    np.testing.assert_array_equal(tl.op_ps, assign_ps(p, 2))
    assert set(r.utilization) == {"worker", "downlink[0]", "uplink[0]", "ps[0]",
                                  "downlink[1]", "uplink[1]", "ps[1]"}
    res = {c.op: c.resource for c in chunks(r)}
    assert res["down:L0"] == "downlink[0]"
    assert res["down:L1"] == "downlink[1]" and res["down:L2"] == "downlink[1]"
    assert res["up:L1"] == "uplink[1]" and res["upd:L1"] == "ps[1]"
    assert res["fwd:L1"] == "worker"
    # the reverse: --ps-count 1 puts a two-PS profile onto one server
    q = layered_profile([MB, MB], [0.1] * 2, [0.1] * 2, overlap=True, ps=[0, 1])
    one = run_sim(q, Bps=B, steps=1, ps_count=1)
    assert one.timeline.resource_names == ("worker", "downlink", "uplink", "ps")
    assert set(one.timeline.op_ps.tolist()) == {0}
