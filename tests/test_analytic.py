"""Coarse models against the papers' closed forms and the simulator; baselines; coarse input."""
from __future__ import annotations

import json

import pytest

import sgdsim
from sgdsim.analytic.async_ps import async_ps, eq5_sweep
from sgdsim.analytic.baselines import cynthia, lin
from sgdsim.analytic.coarse_profile import CoarseProfile, from_profile, parse_coarse, to_profile
from sgdsim.analytic.sync import ring_allreduce, sync_ps
from sgdsim.errors import ConfigError, ProfileError

RESNET = "examples/profiles/resnet50-nooverlap.json"
VGG = "examples/profiles/vgg16-nooverlap.json"
B = 10e9 / 8  # 10 Gb/s, in bytes/s


def _phases(path):
    c = from_profile(sgdsim.load_profile(path))
    return c, c.model_bytes / B


@pytest.mark.parametrize("path", [RESNET, VGG])
@pytest.mark.parametrize("K", [1, 2, 3, 4, 8, 16])
def test_sync_closed_forms_eq7_to_eq11(path, K):
    c, MB = _phases(path)
    C, b = c.compute_s, c.batch_size
    assert sync_ps([(c, K)], B, "ps").throughput == pytest.approx(K * b / (2 * K * MB + C), rel=1e-12)
    assert sync_ps([(c, K)], B, "fcfs").throughput == pytest.approx(K * b / ((K + 1) * MB + C), rel=1e-12)
    hybrid = K * MB + C + (K + 1) * MB / 2
    assert sync_ps([(c, K)], B, "hybrid").throughput == pytest.approx(K * b / hybrid, rel=1e-12)
    eq10 = max(K * MB, c.forward_s) + max((K + 1) * MB / 2, c.backward_s)
    assert sync_ps([(c, K)], B, "hybrid", overlap=True).throughput == pytest.approx(K * b / eq10, rel=1e-12)
    eq11 = C + 2 * (K - 1) * MB / K
    assert ring_allreduce([(c, K)], B).throughput == pytest.approx(K * b / eq11, rel=1e-12)


@pytest.mark.parametrize("path", [RESNET, VGG])
def test_one_worker_is_the_sum_of_phases_for_every_model(path):
    c, MB = _phases(path)
    want = c.batch_size / (2 * MB + c.compute_s + c.update_s)
    for sharing in ("threshold", "ps", "fcfs"):
        assert async_ps([(c, 1)], B, sharing).throughput == pytest.approx(want, rel=1e-12)
    assert lin([(c, 1)], B).throughput == pytest.approx(want, rel=1e-12)
    assert cynthia([(c, 1)], B).throughput == pytest.approx(want, rel=1e-12)
    for sharing in ("ps", "fcfs", "hybrid"):
        assert sync_ps([(c, 1)], B, sharing).throughput == pytest.approx(want, rel=1e-12)
    assert ring_allreduce([(c, 1)], B).throughput == pytest.approx(c.batch_size / c.compute_s, rel=1e-12)


@pytest.mark.parametrize("sharing", ["ps", "fcfs"])
@pytest.mark.parametrize("K", [2, 4])
def test_coarse_sync_equals_the_simulator_without_overlap(sharing, K):
    fine = sgdsim.predict(RESNET, workers=K, mode="sync", sharing=sharing, steps=4, warmup=1)[0]
    coarse = sgdsim.predict(RESNET, workers=K, mode="sync", sharing=sharing, model="coarse")[0]
    assert coarse.throughput == pytest.approx(fine.throughput, rel=1e-9)


@pytest.mark.parametrize("path", [RESNET, VGG])
def test_coarse_and_fine_agree_at_one_worker_and_at_saturation(path):
    c, MB = _phases(path)
    bound = c.batch_size / MB  # b·B/M
    one = {p.model: p.throughput for p in sgdsim.predict(path, workers=1, model="all", steps=5, warmup=1)}
    assert one["coarse"] == pytest.approx(one["fine"], rel=1e-9)
    # at saturation; the simulator with FCFS links (with PS links, deterministic steps clump
    # into convoys and leave the links idle part of the time: docs/coarse.md)
    fine = sgdsim.predict(path, workers=64, sharing="fcfs", steps=10, warmup=5)[0].throughput
    coarse = sgdsim.predict(path, workers=512, model="coarse")[0].throughput
    for x in (fine, coarse):
        assert x == pytest.approx(bound, rel=0.01) and x <= bound * (1 + 1e-6)


def test_async_queueing_model_properties():
    c, MB = _phases(RESNET)
    prev = 0.0
    for K in (1, 2, 4, 8, 16, 64, 256, 1024):
        r = async_ps([(c, K)], B)
        assert r.throughput >= prev - 1e-9  # more workers never hurt in a closed network
        assert r.throughput <= K * c.batch_size / (2 * MB + c.compute_s) * (1 + 1e-12)
        assert r.throughput <= c.batch_size / MB * (1 + 1e-9)
        assert r.utilization["uplink"] <= 1 + 1e-9
        prev = r.throughput
    assert async_ps([(c, 1024)], B).throughput == pytest.approx(c.batch_size / MB, rel=1e-3)


def test_eq5_regime_follows_the_fcfs_utilization():
    c, _ = _phases(RESNET)
    assert async_ps([(c, 1)], B, rho_threshold=0.6).regime.startswith("fcfs")
    assert eq5_sweep(c, B, [64], rho_threshold=0.6)[0].regime.startswith("ps")
    assert async_ps([(c, 64)], B, rho_threshold=0.6).regime.startswith("saturated")  # saturation.py
    K = 6
    X_f = async_ps([(c, K)], B, "fcfs").throughput
    X_p = async_ps([(c, K)], B, "ps").throughput
    assert async_ps([(c, K)], B, rho_threshold=1.0).throughput == pytest.approx(X_f)
    assert async_ps([(c, K)], B, rho_threshold=0.0).throughput == pytest.approx(X_p)
    assert X_f >= X_p  # FCFS interleaves whole transfers: less waiting than equal sharing here


def test_overlap_correction_eq6_only_when_overlapping():
    c, _ = _phases(RESNET)
    over = CoarseProfile(c.model_bytes, c.forward_s, c.backward_s, 0.0, c.batch_size, overlap=True)
    for K in (2, 8, 32):
        plain = eq5_sweep(c, B, [K])[0]
        corrected = eq5_sweep(over, B, [K])[0]
        assert corrected.throughput > plain.throughput
        assert "overlap" in corrected.regime and "overlap" not in plain.regime
        assert lin([(over, K)], B).throughput == pytest.approx(plain.throughput)  # Lin ignores overlap


def test_cynthia_formula():
    c, MB = _phases(VGG)
    Tp, U1 = c.compute_s, 2 * MB / (c.compute_s + 2 * MB)
    for W in (1, 3, 20):
        want = W * c.batch_size / (Tp * max(1, W * U1) + 2 * MB)
        assert cynthia([(c, W)], B).throughput == pytest.approx(want, rel=1e-12)


def test_heterogeneous_async_uses_each_workers_compute():
    c, _ = _phases(RESNET)
    slow = CoarseProfile(c.model_bytes, 2 * c.forward_s, 2 * c.backward_s, 0.0, c.batch_size)
    mixed = async_ps([(c, 2), (slow, 2)], B).throughput
    assert async_ps([(slow, 4)], B).throughput < mixed < async_ps([(c, 4)], B).throughput


def test_coarse_profile_parsing_and_round_trip():
    c = parse_coarse("size=102MB,fwd=182ms,bwd=261ms,batch=128,update=5ms")
    assert (c.model_bytes, c.forward_s, c.backward_s, c.update_s, c.batch_size) == \
        pytest.approx((102e6, 0.182, 0.261, 0.005, 128))
    again = from_profile(to_profile(c))
    assert (again.model_bytes, again.compute_s, again.update_s) == pytest.approx(
        (c.model_bytes, c.compute_s, c.update_s))
    for bad in ("size=102MB,fwd=1ms,bwd=1ms", "size=1XB,fwd=1ms,bwd=1ms,batch=2", "speed=3",
                "size=1MB,fwd=1ms,bwd=1ms,batch=zero"):
        with pytest.raises((ProfileError, ConfigError)):
            parse_coarse(bad)


def test_coarse_spec_runs_every_model_and_fine_agrees_at_one_worker():
    spec = "size=100MB,fwd=100ms,bwd=200ms,batch=64"
    pts = sgdsim.predict(coarse=spec, workers=1, model="all", bandwidth="1Gbps", steps=5, warmup=1)
    want = 64 / (2 * 0.8 + 0.3)
    assert {p.model for p in pts} == {"fine", "coarse", "lin", "cynthia"}
    for p in pts:
        assert p.throughput == pytest.approx(want, rel=1e-9), p.model


def test_options_a_model_cannot_honour_are_errors():
    with pytest.raises(ConfigError, match="coarse model cannot honour --streams http2"):
        sgdsim.predict(RESNET, workers=2, model="coarse", streams="http2")
    with pytest.raises(ConfigError, match="lin"):
        sgdsim.predict(RESNET, workers=2, model="lin", mode="sync")
    with pytest.raises(ConfigError, match="threshold"):
        sgdsim.predict(RESNET, workers=2, model="fine", sharing="threshold")
    skipped = []
    pts = sgdsim.predict(RESNET, workers=2, model="all", flow_cap="5Gbps", steps=3, warmup=1,
                         on_skip=skipped.append)
    assert [p.model for p in pts] == ["fine"] and len(skipped) == 3


def test_coarse_json_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "sgdsim-coarse", "size": "50MB", "fwd": "10ms",
                                "bwd": "20ms", "batch": 32}))
    p = sgdsim.predict(str(path), workers=1, model="coarse", bandwidth="1Gbps")[0]
    assert p.throughput == pytest.approx(32 / (2 * 0.4 + 0.03))
    (tmp_path / "bad.json").write_text(json.dumps({"format": "sgdsim-coarse", "size": "50MB"}))
    with pytest.raises(ProfileError, match="missing fwd="):
        sgdsim.predict(str(tmp_path / "bad.json"), workers=1, model="coarse")
