"""A receiver's parsing inside an all-reduce call, and DDP's buckets through calibration.

Oracles: the all-reduce step in closed form (TPDS Eq. 11 plus α per byte a rank receives,
2(N−1)/N·S, and β per call); a "measured" step made from a known α with 25 MiB buckets must
give that α back when calibrated with the same buckets.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import layered_profile

from sgdsim.analytic.coarse_profile import parse_coarse
from sgdsim.calibrate_worker import calibrate, model_step_s
from sgdsim.errors import ConfigError
from sgdsim.hardware import Hardware, load_hardware, save_hardware
from sgdsim.predict import predict_with
from sgdsim.profile.io import save_profile
from sgdsim.spec import Link
from sgdsim.validate import load_grid
from sgdsim.validate.grid import fingerprint

M, FWD, BWD = 100e6, 0.1, 0.2
COARSE = f"size={M / 1e6:g}MB,fwd={FWD * 1e3:g}ms,bwd={BWD * 1e3:g}ms,batch=32"
FAST = dict(replications=1, steps=20, model_error=0)
B = 10e9 / 8
MiB = 2 ** 20


def _step(model, N, **kw):
    kw = {**FAST, "arch": "allreduce", "mode": "sync", "bandwidth": "10Gbps", **kw}
    return predict_with(parse_coarse(COARSE), kw, workers=[N], model=model)[0].step_time_s  # unchecked: FAST for both


@pytest.mark.parametrize("model", ["fine", "coarse"])
@pytest.mark.parametrize("N", [2, 4, 8])
def test_a_ring_call_parses_what_each_rank_receives(model, N):
    alpha = 2e-9
    share = 2 * (N - 1) / N
    expected = FWD + BWD + share * M / B + alpha * share * M
    assert _step(model, N, overhead_alpha=alpha) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_beta_is_paid_once_per_call(model):
    beta = 3e-3
    calls = round((_step(model, 4, overhead_beta=beta) - _step(model, 4)) / beta)
    assert calls >= 1
    assert _step(model, 4, overhead_beta=beta) - _step(model, 4) == pytest.approx(calls * beta, rel=1e-6)


def test_ring_parse_closed_form_and_no_call_without_bytes():
    link = Link(bandwidth_Bps=B, overhead_alpha_s_per_byte=1e-9, overhead_beta_s=1e-4)
    got = link.ring_parse_s([0.0, 8e6], 4)
    assert got[0] == 0.0
    assert got[1] == pytest.approx(1e-9 * 1.5 * 8e6 + 1e-4, rel=1e-12)
    assert list(link.ring_parse_s([8e6], 1)) == [0.0]  # one rank sends and receives nothing


def test_fine_and_coarse_agree_on_a_calibrated_two_rank_point():
    """Both models charge the parsing on the call's path, so a fit to one holds for the other
    at the point it was fitted on (they disagreed by 25 % when the simulator charged it to the
    update that consumes the call, off the critical path)."""
    kw = dict(overhead_alpha=2e-8, bucket_size="25MiB")
    fine, coarse = (_step(m, 2, **kw) for m in ("fine", "coarse"))
    assert fine == pytest.approx(coarse, rel=1e-6)


# ---------------------------------------------------------------- calibration with buckets

SIZES = [0.5e6, 3e6, 0.3e6, 4e6]
FWDS, BWDS = [0.004, 0.006, 0.003, 0.002], [0.008, 0.012, 0.006, 0.004]


def _hw():
    """β 5 ms per call: 4 calls per step one per layer, 2 in DDP's buckets (1 MiB, then the rest)."""
    return Hardware(bandwidth_bps=200e6, latency_s=0.0, overhead_alpha_s_per_byte=8 / 200e6, overhead_beta_s=5e-3)


def test_calibration_with_buckets_gives_the_true_alpha_back():
    prof = layered_profile(SIZES, FWDS, BWDS, overlap=True, batch=16)
    true_alpha, bucket = 4e-9, 25 * MiB
    measured = model_step_s(prof, _hw(), "allreduce", "sync", true_alpha, bucket_size_bytes=bucket)
    per_layer = model_step_s(prof, _hw(), "allreduce", "sync", true_alpha)
    assert abs(per_layer / measured - 1) > 0.01  # the buckets change the step: the test can tell
    out = calibrate(prof, measured, _hw(), "allreduce", "sync", bucket_size_bytes=bucket)
    assert out.parse_alpha_s_per_byte == pytest.approx(true_alpha, rel=1e-3)
    assert out.measured["calibration"]["bucket_size_bytes"] == bucket
    wrong = calibrate(prof, measured, _hw(), "allreduce", "sync")
    assert wrong.parse_alpha_s_per_byte != pytest.approx(true_alpha, rel=0.05)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", *args], capture_output=True, text=True)


def test_cli_calibrate_takes_the_buckets_and_refuses_them_elsewhere(tmp_path):
    prof = layered_profile(SIZES, FWDS, BWDS, overlap=True, batch=16)
    save_profile(prof, str(tmp_path / "p.json"))
    save_hardware(_hw(), str(tmp_path / "hw.json"))
    base = ["calibrate", str(tmp_path / "p.json"), "--hardware", str(tmp_path / "hw.json"), "--mode", "sync"]
    r = _cli(*base, "--arch", "allreduce", "--throughput", "20", "--bucket-size", "25MiB", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 0, r.stderr
    assert load_hardware(str(tmp_path / "o.json")).measured["calibration"]["bucket_size_bytes"] == 25 * MiB
    for extra, message in ((["--arch", "ps", "--bucket-size", "25MiB"], "--bucket-size applies to"),
                           (["--arch", "allreduce", "--bucket-size", "lots"], "cannot parse size"),
                           (["--arch", "allreduce", "--bucket-size", "0MB"], "--bucket-size must be")):
        r = _cli(*base, *extra, "--throughput", "20", "-o", str(tmp_path / "x.json"))
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "x.json").exists()


def test_predict_says_when_the_file_was_calibrated_with_other_buckets(tmp_path):
    prof = layered_profile(SIZES, FWDS, BWDS, overlap=True, batch=16)
    save_profile(prof, str(tmp_path / "p.json"))
    save_hardware(_hw(), str(tmp_path / "hw.json"))
    r = _cli("calibrate", str(tmp_path / "p.json"), "--hardware", str(tmp_path / "hw.json"), "--mode", "sync",
             "--arch", "allreduce", "--throughput", "20", "--bucket-size", "25MiB", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 0, r.stderr
    run = ["predict", str(tmp_path / "p.json"), "--hardware", str(tmp_path / "o.json"), "--arch", "allreduce",
           "--mode", "sync", "--workers", "2", "--replications", "1"]
    warned = [line for line in _cli(*run).stderr.splitlines() if line.startswith("warning:")]
    assert warned == [f"warning: {tmp_path / 'o.json'} was calibrated on a run with DDP buckets of 25MiB; "
                      "this prediction has one call per layer (--bucket-size 25MiB predicts the same job)"]
    assert "warning:" not in _cli(*run, "--bucket-size", "25MiB").stderr
    other = _cli(*run, "--bucket-size", "4MiB")
    assert other.returncode == 0 and "this prediction has DDP buckets of 4MiB" in other.stderr


# ---------------------------------------------------------------- the grid's bucket_size

CASE = """
[[case]]
name = "c"
model = "lab:cnn-4mb"
batch_size = 16
bandwidth = "200Mbps"
workers = "2,4"
arch = "{arch}"
mode = "sync"
overlap = {overlap}
trainer = "{trainer}"
{bucket}
"""


def _grid(tmp_path, arch="allreduce", overlap="true", trainer="torch", bucket='bucket_size = "25MiB"'):
    path = tmp_path / "g.toml"
    path.write_text(CASE.format(arch=arch, overlap=overlap, trainer=trainer, bucket=bucket))
    return load_grid(path)


def test_a_grid_states_the_buckets_the_lab_runs(tmp_path):
    case = _grid(tmp_path).cases[0]
    assert case.bucket_size_bytes == 25 * MiB and case.network()["bucket_size"] == 25 * MiB
    assert "DDP buckets of 25 MiB" in case.describe()
    lab = _grid(tmp_path, trainer="lab", bucket='bucket_size = "4MiB"').cases[0]
    assert lab.bucket_size_bytes == 4 * MiB


@pytest.mark.parametrize("kw,message", [
    (dict(bucket='bucket_size = "4MiB"'), "runs buckets of 25MiB"),
    (dict(trainer="lab", overlap="false"), "one call per layer"),
    (dict(arch="ps", overlap="false", trainer="lab"), "one call per layer"),
    (dict(bucket='bucket_size = "big"'), "'bucket_size'"),
    (dict(bucket="bucket_size = true"), "'bucket_size' must be a size"),
])
def test_a_bucket_size_the_lab_does_not_run_is_refused(tmp_path, kw, message):
    with pytest.raises(ConfigError, match=message):
        _grid(tmp_path, **kw)


def test_grids_without_the_key_keep_their_fingerprint(tmp_path):
    plain = _grid(tmp_path, bucket="")
    assert "bucket_size_bytes" not in plain.cases[0].to_dict()
    assert fingerprint(plain) != fingerprint(_grid(tmp_path))
