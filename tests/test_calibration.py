"""Calibration from one real worker, and the overhead transform every model reads.

Oracles: the one-worker no-overlap step in closed form (below); a "measured" step made from a
known α or bandwidth must give that α or bandwidth back.
"""
import json
import math

import pytest
from conftest import layered_profile

import sgdsim
from sgdsim.calibrate_worker import calibrate
from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.hardware import Hardware, load_hardware, save_hardware
from sgdsim.profile.io import save_profile
from sgdsim.profile.transforms import with_overhead

SIZES = [4e6, 0.0, 6e6]          # bytes; the middle layer has no parameters
FWD, BWD, UPD = [0.01, 0.02, 0.03], [0.02, 0.04, 0.06], [0.001, 0.0, 0.002]
B_bps = 100e6
M = sum(SIZES)


def _profile():
    return layered_profile(SIZES, FWD, BWD, upd=UPD, overlap=False, batch=16)


def _closed_form(alpha=0.0, beta=0.0, bw_bps=B_bps):
    """Every download's parsing lands on the first forward, which waits for all of them; the
    uploads go L2 then L0, and L2's update (with its parsing) ends while L0 is still on the
    link, so only L0's update and parsing follow the last byte."""
    downs = sum(1 for s in SIZES if s > 0)
    return (sum(FWD) + sum(BWD) + 2 * M * 8 / bw_bps + alpha * M + beta * downs
            + UPD[0] + alpha * SIZES[0] + beta)


def _hw(**kw):
    return Hardware(bandwidth_bps=B_bps, latency_s=0.0, overhead_alpha_s_per_byte=8 / B_bps,
                    overhead_beta_s=0.0, **kw)


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (2e-9, 0.0), (0.0, 1e-3), (1e-9, 5e-4)])
def test_overhead_transform_matches_the_closed_form_in_the_simulator(alpha, beta):
    prof = with_overhead(_profile(), alpha, beta)
    pt = sgdsim.predict(prof, workers=1, bandwidth=B_bps, replications=1, steps=5, warmup=0)[0]
    assert pt.step_time_s == pytest.approx(_closed_form(alpha, beta), rel=1e-9)


def test_overhead_reaches_the_coarse_model_too():
    base = sgdsim.predict(_profile(), workers=1, bandwidth=B_bps, model="coarse")[0]
    slow = sgdsim.predict(_profile(), workers=1, bandwidth=B_bps, model="coarse",
                          overhead_alpha=2e-9)[0]
    # the coarse model's one-worker step is compute + 2M/B as well
    assert slow.step_time_s - base.step_time_s == pytest.approx(2e-9 * 2 * M, rel=1e-6)


def test_transform_records_its_provenance_and_leaves_the_input_alone():
    prof = _profile()
    out = with_overhead(prof, 1e-9, 0.0, source="test")
    assert out.extra["transforms"][-1] == {"transform": "overhead", "alpha_s_per_byte": 1e-9,
                                           "beta_s": 0.0, "pulls": True, "source": "test"}
    assert "transforms" not in prof.extra and with_overhead(prof, 0.0, 0.0) is prof
    with pytest.raises(ConfigError):
        with_overhead(prof, -1e-9, 0.0)


def test_a_slower_real_step_is_fitted_as_receiver_cpu_per_byte():
    true_alpha = 3e-9
    out = calibrate(_profile(), _closed_form(true_alpha), _hw())
    assert out.parse_alpha_s_per_byte == pytest.approx(true_alpha, rel=1e-3)
    cal = out.measured["calibration"]
    assert cal["predicted_step_s_before"] == pytest.approx(_closed_form(), rel=1e-9)
    assert cal["predicted_step_s_after"] == pytest.approx(_closed_form(true_alpha), rel=1e-4)
    assert out.bandwidth_bps == B_bps


def test_a_faster_real_step_is_fitted_as_more_bandwidth():
    out = calibrate(_profile(), _closed_form(bw_bps=1.25 * B_bps), _hw())
    assert out.bandwidth_bps == pytest.approx(1.25 * B_bps, rel=1e-3)
    assert out.parse_alpha_s_per_byte == 0.0


def test_a_step_faster_than_the_computation_is_an_error():
    with pytest.raises(ConfigError, match="shorter than the profile's computation"):
        calibrate(_profile(), 0.5 * (sum(FWD) + sum(BWD)), _hw())
    with pytest.raises(ConfigError):
        calibrate(_profile(), math.nan, _hw())


def test_calibrated_file_is_used_by_predict(tmp_path, capsys):
    prof_path, hw_path, out_path = tmp_path / "p.json", tmp_path / "hw.json", tmp_path / "cal.json"
    save_profile(_profile(), prof_path)
    save_hardware(_hw(), hw_path)
    step = _closed_form(2e-9)
    assert main(["calibrate", str(prof_path), "--throughput", str(16 / step), "--hardware",
                 str(hw_path), "-o", str(out_path)]) == 0
    assert "receiver CPU" in capsys.readouterr().out
    assert load_hardware(out_path).parse_alpha_s_per_byte == pytest.approx(2e-9, rel=1e-3)
    assert main(["predict", str(prof_path), "--workers", "1", "--hardware", str(out_path),
                 "--replications", "1", "--steps", "5", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["step_time_s"] == pytest.approx(step, rel=1e-3)
    # nothing a user saved is overwritten
    assert main(["calibrate", str(prof_path), "--step-time", "1s", "--hardware", str(hw_path),
                 "-o", str(out_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    # a step time without a unit is ambiguous (12 ms or 12 s?): refused before any work
    for bad in ("12", "1.72s,12"):
        assert main(["calibrate", str(prof_path), "--step-time", bad, "--hardware", str(hw_path),
                     "-o", str(tmp_path / "new.json")]) == 2
        err = capsys.readouterr().err
        assert "--step-time 12 has no unit (write e.g. 12ms or 12s)" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "new.json").exists()


def test_several_runs_fit_their_mean_and_record_their_spread():
    """Runs at step times T·(1 ± d): the fit is that of their mean, and the spread is the
    textbook prediction half-width t_{n-1}·s/mean·sqrt(1 + 1/n) (s of ±d: d·sqrt(n/(n-1)))."""
    T, d = _closed_form(2e-9), 0.01
    runs = [T * (1 - d), T * (1 + d)]
    out = calibrate(_profile(), runs, _hw())
    assert out.parse_alpha_s_per_byte == pytest.approx(2e-9, rel=1e-3)
    s = d * T * math.sqrt(2)  # the sample sd of two values T ± dT
    assert out.run_spread_rel == pytest.approx(12.706 * s / T * math.sqrt(1.5), rel=1e-3)
    assert out.measured["calibration"]["runs_step_s"] == runs
    one = calibrate(_profile(), [T], _hw())
    assert one.run_spread_rel is None  # one run says nothing about the spread


def test_run_spread_widens_every_fine_interval_and_nothing_else(tmp_path, capsys):
    kw = dict(workers=[1, 2], replications=1, steps=40, model_error=0)
    base = sgdsim.predict(_profile(), **kw)
    wide = sgdsim.predict(_profile(), run_spread=0.05, **kw)
    for b, w in zip(base, wide):
        assert w.throughput == b.throughput
        assert w.ci_low == pytest.approx(min(b.ci_low, 0.95 * b.throughput))
        assert w.ci_high == pytest.approx(max(b.ci_high, 1.05 * b.throughput))
    with pytest.raises(ConfigError, match="run spread"):
        sgdsim.predict(_profile(), run_spread=float("nan"), **kw)


def test_cli_takes_several_runs(tmp_path, capsys):
    prof_path, hw_path, out_path = tmp_path / "p.json", tmp_path / "hw.json", tmp_path / "cal.json"
    save_profile(_profile(), prof_path)
    save_hardware(_hw(), hw_path)
    T = _closed_form(2e-9)
    assert main(["calibrate", str(prof_path), "--throughput", f"{16 / T * 0.99},{16 / T * 1.01}",
                 "--hardware", str(hw_path), "-o", str(out_path)]) == 0
    assert "2 runs vary" in capsys.readouterr().out
    assert load_hardware(out_path).run_spread_rel > 0
    assert main(["calibrate", str(prof_path), "--throughput", "9,x", "--hardware", str(hw_path),
                 "-o", str(tmp_path / "other.json")]) == 2
    assert "numbers separated by commas" in capsys.readouterr().err
