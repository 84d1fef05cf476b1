"""An all-reduce occupies part of the device while it runs (Tianshu §3.3): compute that overlaps
it slows down. Oracles: a timeline of a two-layer step summed by hand, the coarse closed form,
no effect without overlap, the hardware file's field, and one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import sgdsim
from sgdsim.analytic.coarse_profile import from_profile
from sgdsim.analytic.sync import ring_allreduce
from sgdsim.errors import ConfigError
from sgdsim.hardware import Hardware
from sgdsim.parse.hardware import specs_from_hardware
from sgdsim.profile.transforms import allreduce_compute_pairs, with_allreduce_compute

from conftest import layered_profile

BPS = 1e9
B = BPS / 8
FWD = [0.010, 0.020]
BWD = [0.030, 0.040]  # bwd:L1 runs first, then bwd:L0


def _ring_s(size: float, n: int) -> float:
    return 2 * (n - 1) / n * size / B


def _hand_step_s(sizes, share: float, n: int) -> float:
    """One worker's step, every op placed by hand. After bwd:L1 the call of L1 starts on the
    link and its compute share runs before bwd:L0 (it goes first among ready compute); the call
    of L0 waits for bwd:L0 and for the link; its share ends before it does."""
    a0, a1 = _ring_s(sizes[0], n), _ring_s(sizes[1], n)
    t1 = sum(FWD) + BWD[1]
    t2 = t1 + share * a1 + BWD[0]
    return max(t2, t1 + a1) + a0


@pytest.mark.parametrize("sizes", [[2e6, 3e6], [2e6, 8e6]])  # call of L1 shorter / longer than bwd:L0
@pytest.mark.parametrize("share", [0.0, 0.2, 0.6])
@pytest.mark.parametrize("n", [2, 4])
def test_fine_step_is_the_hand_placed_timeline(sizes, share, n):
    prof = layered_profile(sizes, FWD, BWD, overlap=True, batch=32)
    pt = sgdsim.predict(prof, workers=n, bandwidth=BPS, mode="sync", arch="allreduce",
                        allreduce_compute_share=share, steps=4, warmup=1, replications=1)[0]
    assert pt.throughput == pytest.approx(n * 32 / _hand_step_s(sizes, share, n), rel=1e-9)


def test_the_share_changes_the_answer_only_where_compute_overlaps_a_call():
    sizes = [2e6, 3e6]  # the call of L1 (36 ms at n=4) is shorter than s·A1 + bwd:L0
    kw = dict(workers=4, bandwidth=BPS, mode="sync", arch="allreduce", steps=4, warmup=1,
              replications=1)
    over = layered_profile(sizes, FWD, BWD, overlap=True)
    plain = [sgdsim.predict(over, allreduce_compute_share=s, **kw)[0].throughput for s in (0, .5)]
    assert plain[1] < plain[0]
    serial = layered_profile(sizes, FWD, BWD, overlap=False)
    both = [sgdsim.predict(serial, allreduce_compute_share=s, **kw)[0].throughput for s in (0, .5)]
    assert both[0] == pytest.approx(both[1], rel=1e-12)  # the calls run after the backward


@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("share", [0.0, 0.25])
def test_coarse_is_eq11_with_the_backward_stretched(overlap, share):
    prof = layered_profile([4e6, 12e6], FWD, BWD, overlap=overlap)
    c = from_profile(prof)
    K = 4
    TA = 2 * (K - 1) / K * c.model_bytes / B
    TF, TB = sum(FWD), sum(BWD)
    expected = TF + (max(TB + share * TA, TA) if overlap else TB + TA)
    got = ring_allreduce([(c, K)], B, overlap=overlap, compute_share=share)
    assert got.step_time_s == pytest.approx(expected, rel=1e-12)
    api = sgdsim.predict(coarse=replace(c, overlap=overlap), workers=K, bandwidth=BPS,
                         mode="sync", arch="allreduce", allreduce_compute_share=share,
                         model="coarse")[0]
    assert api.throughput == pytest.approx(K * prof.job.batch_size / got.step_time_s, rel=1e-12)


def test_the_transform_shadows_every_call_once_and_keeps_the_profile():
    prof = layered_profile([4e6, 0.0, 12e6], [.01] * 3, [.02] * 3, overlap=True)
    shadowed = with_allreduce_compute(prof)
    virtual, call = allreduce_compute_pairs(shadowed)
    calls = [i for i, o in enumerate(prof.ops) if o.resource == "uplink"]
    assert len(virtual) == len(calls) == 2
    for v, c in zip(virtual, call):
        assert v == c + 1  # right after its call
        assert shadowed.ops[v].deps == shadowed.ops[c].deps
        assert shadowed.ops[v].resource == "worker"
    assert not shadowed.durations_s[:, virtual].any()
    assert with_allreduce_compute(shadowed) is shadowed  # never twice
    assert shadowed.extra["transforms"][-1] == {"transform": "allreduce_compute", "virtual_ops": 2}
    keep = np.setdiff1d(np.arange(shadowed.n_ops), virtual)
    assert np.array_equal(shadowed.durations_s[:, keep], prof.durations_s)


def test_the_hardware_file_supplies_the_share_for_allreduce_only():
    hw = Hardware(bandwidth_bps=BPS, latency_s=0, overhead_alpha_s_per_byte=8 / BPS,
                  overhead_beta_s=0, allreduce_compute_share=0.3)
    assert specs_from_hardware(hw, "allreduce")[1].nodes.allreduce_compute_share == 0.3
    assert "allreduce_compute_share" not in hw.predict_kwargs("ps")
    assert specs_from_hardware(hw, "allreduce", allreduce_compute_share=0.1
                               )[1].nodes.allreduce_compute_share == 0.1


@pytest.mark.parametrize("kw,msg", [
    (dict(arch="ps", mode="async", allreduce_compute_share=0.2), "applies to --arch allreduce"),
    (dict(arch="allreduce", mode="sync", allreduce_compute_share=1.0), "fraction in [0, 1)"),
    (dict(arch="allreduce", mode="sync", allreduce_compute_share=float("nan")), "non-negative"),
    (dict(arch="allreduce", mode="sync", allreduce_compute_share=-0.1), "non-negative"),
])
def test_bad_shares_are_refused(kw, msg):
    prof = layered_profile([4e6], [.01], [.02], overlap=True)
    with pytest.raises(ConfigError, match=msg.replace("[", r"\[").replace(")", r"\)")):
        sgdsim.predict(prof, workers=2, model="coarse", **kw)


def test_cli_reads_the_option_and_the_hardware_field(tmp_path):
    prof = layered_profile([2e6, 3e6], FWD, BWD, overlap=True)
    from sgdsim.profile.io import save_profile
    path = tmp_path / "p.json"
    save_profile(prof, path)
    hw = tmp_path / "hw.json"
    doc = Hardware(bandwidth_bps=BPS, latency_s=0, overhead_alpha_s_per_byte=8 / BPS,
                   overhead_beta_s=0, allreduce_compute_share=0.5).to_dict()
    hw.write_text(json.dumps(doc))

    def run(*extra):
        r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", str(path), "--workers",
                            "2", "--arch", "allreduce", "--mode", "sync", "--steps", "4",
                            "--replications", "1", "--warmup", "1", "--jobs", "1", "--format",
                            "json", *extra], capture_output=True, text=True)
        return r

    from_file = json.loads(run("--hardware", str(hw)).stdout)
    explicit = json.loads(run("--bandwidth", "1Gbps", "--allreduce-compute-share", "0.5").stdout)
    none = json.loads(run("--bandwidth", "1Gbps").stdout)
    thr = [d[0]["throughput"] if isinstance(d, list) else d["points"][0]["throughput"]
           for d in (from_file, explicit, none)]
    assert thr[0] == pytest.approx(thr[1], rel=1e-12) and thr[1] < thr[2]
    doc["allreduce_compute_share"] = 1.5
    hw.write_text(json.dumps(doc))
    bad = run("--hardware", str(hw))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "allreduce_compute_share" in bad.stderr
