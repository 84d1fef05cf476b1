"""Ring all-reduce with a per-step latency: 2(N−1)·(S/(N·B) + α) per call, one call per layer.

Oracles: the closed form summed by hand over a profile's layers (fine and coarse models), the
α-β fit on exact synthetic data, the coarse profile's message count, and one-line errors.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import sgdsim
from sgdsim.analytic.coarse_profile import from_profile, parse_coarse, to_profile
from sgdsim.analytic.sync import ring_allreduce, ring_allreduce_s
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.lab.gloo_bench import fit_ring_latency, rank_counts
from sgdsim.hardware import Hardware, hardware_from_dict

from conftest import example, layered_profile
from simcfg import simcfg

BPS = 1e9
B = BPS / 8
ALPHA = 2e-3
SIZES = [4e6, 0.0, 12e6, 1e6]  # three layers with parameters: three calls per step
FWD = [0.010, 0.002, 0.030, 0.004]
BWD = [0.020, 0.003, 0.050, 0.008]


def _profile():
    return layered_profile(SIZES, FWD, BWD, overlap=False, batch=32)


def _hand_step_s(N: int, alpha: float) -> float:
    calls = [s for s in SIZES if s > 0]
    ring = sum(2 * (N - 1) * (s / (N * B) + alpha) for s in calls)
    return sum(FWD) + sum(BWD) + ring


@pytest.mark.parametrize("N", [1, 2, 3, 8])
def test_fine_and_coarse_step_is_the_hand_summed_ring_over_every_call(N):
    prof = _profile()
    expected = N * prof.job.batch_size / _hand_step_s(N, ALPHA)
    fine = sgdsim.predict(prof, workers=N, bandwidth=BPS, mode="sync", arch="allreduce",
                          ring_latency="2ms", steps=5, warmup=1)[0]
    coarse = sgdsim.predict(prof, workers=N, bandwidth=BPS, mode="sync", arch="allreduce",
                            ring_latency=ALPHA, model="coarse")[0]
    assert fine.throughput == pytest.approx(expected, rel=1e-9)
    assert coarse.throughput == pytest.approx(expected, rel=1e-9)


def test_zero_latency_is_tpds_eq11():
    prof = example("resnet50-nooverlap")
    c = from_profile(prof)
    K = 4
    eq11 = c.compute_s + 2 * (K - 1) / K * c.model_bytes / B
    assert ring_allreduce([(c, K)], B).step_time_s == pytest.approx(eq11, rel=1e-12)


def test_one_call_costs_two_n_minus_one_steps():
    got = ring_allreduce_s([0.0, 8e6], 4, B, 1e-3)
    assert got[0] == 0.0  # a layer without parameters makes no call
    assert got[1] == pytest.approx(6 * (2e6 / B + 1e-3), rel=1e-12)


def test_coarse_profile_counts_calls_and_round_trips_through_the_simulator_dag():
    prof = _profile()
    c = from_profile(prof)
    assert c.messages == 3
    back = from_profile(to_profile(c))
    assert back.messages == 3
    assert back.model_bytes == pytest.approx(c.model_bytes)
    assert back.compute_s == pytest.approx(c.compute_s)
    one = parse_coarse("size=10MB,fwd=1ms,bwd=2ms,batch=8")
    assert one.messages == 1 and len(to_profile(one).ops) == 5  # the one-layer DAG as before
    assert parse_coarse("size=10MB,fwd=1ms,bwd=2ms,batch=8,messages=4").messages == 4


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_messages_must_be_a_positive_integer(bad):
    with pytest.raises(ProfileError, match="messages must be a positive integer"):
        parse_coarse(f"size=10MB,fwd=1ms,bwd=2ms,batch=8,messages={bad}")


def test_fit_recovers_the_step_latency_from_exact_calls():
    bw = 95e6
    pts = [[n, s, 2 * (n - 1) * (s * 8 / (n * bw) + 1.7e-3)]
           for n in (2, 4, 8) for s in (4096, 65536, 1 << 20)]
    assert fit_ring_latency(pts, bw) == pytest.approx(1.7e-3, rel=1e-9)
    faster = [[n, s, 0.5 * 2 * (n - 1) * s * 8 / (n * bw)] for n, s, _ in pts]
    assert fit_ring_latency(faster, bw) == 0.0  # never negative
    with pytest.raises(ConfigError):
        fit_ring_latency([[1, 4096, 0.001]], bw)


def test_rank_counts_double_up_to_the_largest():
    assert rank_counts(8) == [2, 4, 8]
    assert rank_counts(6) == [2, 4, 6]
    assert rank_counts(2) == [2]


def test_hardware_file_carries_it_for_all_reduce_only():
    hw = Hardware.nominal(1e8)
    hw = hardware_from_dict({**hw.to_dict(), "ring_latency_s": 0.0011})
    assert hw.ring_latency_s == 0.0011
    assert hw.predict_kwargs("allreduce")["ring_latency"] == 0.0011
    assert "ring_latency" not in hw.predict_kwargs("ps")
    with pytest.raises(ProfileError, match="ring_latency_s"):
        hardware_from_dict({**hw.to_dict(), "ring_latency_s": -1.0})


@pytest.mark.parametrize("kw,msg", [({"arch": "ps", "mode": "sync"}, "applies to --arch allreduce"),
                                    ({"arch": "allreduce", "mode": "sync", "ring_latency_s": math.inf},
                                     "duration from 0 to 1h")])
def test_ring_latency_outside_all_reduce_or_infinite_is_refused(kw, msg):
    kw.setdefault("ring_latency_s", 1e-3)
    with pytest.raises(ConfigError, match=msg):
        simcfg(bandwidth_bps=BPS, **kw)


def test_cli_refuses_ring_latency_with_a_parameter_server(capsys):
    from sgdsim.cli import main

    code = main(["predict", "examples/profiles/alexnet.json", "--workers", "2",
                 "--ring-latency", "1ms", "--steps", "2", "--warmup", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--ring-latency applies to --arch allreduce" in err[0]


def test_lab_all_reduce_of_a_layer_keeps_every_tensor(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from sgdsim.lab.train.allreduce import _all_reduce_layer

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        w, b = torch.nn.Parameter(torch.ones(3, 4)), torch.nn.Parameter(torch.zeros(4))
        w.grad = torch.arange(12.0).reshape(3, 4)
        b.grad = torch.tensor([5.0, 6.0, 7.0, 8.0])
        _all_reduce_layer([w, b], world=2)  # a sum over one rank, then the mean over "two"
        assert torch.equal(w.grad, torch.arange(12.0).reshape(3, 4) / 2)
        assert torch.equal(b.grad, torch.tensor([2.5, 3.0, 3.5, 4.0]))
        single = torch.nn.Parameter(torch.ones(2))
        single.grad = torch.tensor([1.0, 3.0])
        _all_reduce_layer([single], world=1)
        assert np.allclose(single.grad.numpy(), [1.0, 3.0])
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("argv,msg", [
    (["--lab", "--add-to", "examples/grids/hardware-lab-100mbps.json"], "something to add"),
    (["--local", "--add-to", "examples/grids/hardware-lab-100mbps.json", "--gloo", "2"], "need --lab"),
])
def test_netbench_add_to_needs_the_lab_and_an_extra(argv, msg, capsys):
    from sgdsim.cli import main

    assert main(["netbench", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


@pytest.mark.lab
def test_netbench_gloo_adds_the_ring_latency_to_an_existing_file(tmp_path, monkeypatch, capsys):
    """The real path on a 3-host lab: --gloo 2 --add-to keeps the file's point-to-point fields
    and adds the all-reduce rate, the ring-step latency and its medians on 2 ranks."""
    import os
    import shutil

    pytest.importorskip("torch")
    from sgdsim.cli import main
    from sgdsim.lab.cluster import LabCluster, list_namespaces
    from sgdsim.hardware import load_hardware, save_hardware

    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        pytest.skip("the lab needs root and iproute2 (ip, tc)")
    if list_namespaces():
        pytest.skip(f"sgdsim- namespaces exist ({', '.join(list_namespaces())}); not touching them")
    base = Hardware.nominal(1e9)
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    save_hardware(base, src)
    state = str(tmp_path / "lab.json")
    monkeypatch.setenv("SGDSIM_LAB_STATE", state)
    with LabCluster(3, 1e9, state_file=state):
        code = main(["netbench", "--lab", "--gloo", "2", "--add-to", str(src), "-o", str(out)])
    assert code == 0 and list_namespaces() == []
    hw = load_hardware(out)
    assert hw.bandwidth_bps == base.bandwidth_bps and hw.latency_s == base.latency_s
    assert hw.allreduce_bandwidth_bps > 0 and hw.ring_latency_s >= 0
    points = hw.measured["ring_latency_points"]
    assert sorted({n for n, _, _ in points}) == [2] and all(t > 0 for _, _, t in points)
    assert fit_ring_latency(points, hw.allreduce_bandwidth_bps) == hw.ring_latency_s
    assert "per ring step" in capsys.readouterr().out
