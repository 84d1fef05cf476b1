"""Calibration from a pilot run at a few worker counts (``calibrate_pilot``).

Oracles: "measurements" made by the model itself from a known goodput B* and receiver CPU α*
must give α* back and B* as the pilot's weight against the file's B0 says (a Gaussian
posterior: the pilot moves a prediction the fraction τ²/(τ² + v) of the way to its runs, v
a run's variance, τ the model's error); the fit's uncertainty must shrink as the pilot's
noise does.
"""
import math

import pytest
from conftest import layered_profile

import sgdsim
from sgdsim.calibrate_pilot import calibrate_pilot, extrapolate
from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.hardware import Hardware, load_hardware
from sgdsim.profile.io import save_profile

SIZES = [4e6, 0.0, 6e6]
FWD, BWD, UPD = [0.01, 0.02, 0.03], [0.02, 0.04, 0.06], [0.001, 0.0, 0.002]
B_bps = 100e6


def _profile():
    return layered_profile(SIZES, FWD, BWD, upd=UPD, overlap=False, batch=16)


def _hw():
    return Hardware(bandwidth_bps=B_bps, latency_s=0.0, overhead_alpha_s_per_byte=8 / B_bps,
                    overhead_beta_s=0.0)


def _truth(W, bw_bps, alpha):
    return sgdsim.predict(_profile(), workers=[W], mode="sync", bandwidth=bw_bps, overhead_alpha=alpha,
                          replications=1, steps=200, model_error=0.0)[0].throughput


@pytest.mark.parametrize("factor, alpha", [(0.8, 3e-9), (1.1, 1e-9)])
def test_a_precise_pilot_made_by_the_model_gives_its_goodput_and_cpu_back(factor, alpha):
    """Forty runs at each count weigh 40 times one: the file's B0 then barely counts."""
    runs = [(W, _truth(W, factor * B_bps, alpha)) for W in (1, 2, 4) for _ in range(40)]
    fit = calibrate_pilot(_profile(), runs, _hw(), "ps", "sync")
    assert fit.bandwidth_bps == pytest.approx(factor * B_bps, rel=0.01)
    assert fit.alpha_s_per_byte == pytest.approx(alpha, rel=0.1, abs=5e-11)
    assert all(abs(r) < 0.5 for _, r in fit.residuals_pct)
    assert fit.hardware.bandwidth_bps == fit.bandwidth_bps
    assert fit.hardware.parse_alpha_s_per_byte == fit.alpha_s_per_byte


@pytest.mark.parametrize("factor", [0.85, 0.95])
def test_one_run_at_two_workers_moves_the_prediction_by_the_posterior_s_share(factor):
    """A deterministic sync job (no run spread): one run's variance v is the noise floor
    (2 %)², the file's B0 is known to τ = the model's error / 1.96, so the fitted W = 2 lies the
    fraction τ²/(τ² + v) of the way from B0's prediction to the run (linearised: within 3 % of
    that share). Goodputs below B0, where α ≥ 0 fits W = 1 exactly."""
    from sgdsim.calibrate_pilot import MIN_NOISE_REL, _Model
    from sgdsim.spec.control import MODEL_ERROR_REL

    runs = [(W, _truth(W, factor * B_bps, 0.0)) for W in (1, 2)]
    fit = calibrate_pilot(_profile(), runs, _hw(), "ps", "sync")
    tau2, v = (MODEL_ERROR_REL / 1.96) ** 2, MIN_NOISE_REL ** 2
    at_b0 = _Model(_profile(), _hw(), "ps", "sync", None, 1, runs[0][1])  # α fitted to W = 1 at B0
    before = at_b0.log_x(2, B_bps) - math.log(runs[1][1])  # B0's miss at W = 2
    after = math.log(1 + dict(fit.residuals_pct)[2] / 100)
    assert 1 - after / before == pytest.approx(tau2 / (tau2 + v), abs=0.03)
    assert min(1.0, factor) * B_bps < fit.bandwidth_bps < max(1.0, factor) * B_bps


def test_the_fit_s_uncertainty_follows_the_runs_noise_and_reaches_the_extrapolation():
    clean = [(W, _truth(W, 0.9 * B_bps, 2e-9)) for W in (1, 2)]
    quiet = calibrate_pilot(_profile(), [(W, x * f) for W, x in clean for f in (0.99, 1.01)],
                            _hw(), "ps", "sync")
    noisy = calibrate_pilot(_profile(), [(W, x * f) for W, x in clean for f in (0.9, 1.1)],
                            _hw(), "ps", "sync")
    assert noisy.noise_rel > quiet.noise_rel >= 0.02
    assert noisy.sd_log_bandwidth > quiet.sd_log_bandwidth > 0
    out = extrapolate(noisy, _profile(), _hw(), "ps", "sync", [1, 2, 8])
    assert [w for w, _, _ in out] == [1, 2, 8]
    assert all(x > 0 and 0 < u < 1 and math.isfinite(u) for _, x, u in out)


@pytest.mark.parametrize("runs, message", [
    ([(1, 10.0)], "two or more worker counts"),
    ([(1, 10.0), (1, 11.0)], "two or more worker counts"),
    ([(1, 10.0), (2, -1.0)], "positive"),
    ([(0, 10.0), (2, 11.0)], "positive"),
])
def test_a_bad_pilot_is_one_line(runs, message):
    with pytest.raises(ConfigError, match=message):
        calibrate_pilot(_profile(), runs, _hw(), "ps", "sync")


def test_an_all_reduce_pilot_with_a_lone_rank_is_refused():
    """One rank all-reduces nothing: its run says nothing of the link, and fitting it gave a
    W = 1 residual of +13871 %."""
    with pytest.raises(ConfigError, match="needs runs at 2 or more workers; drop the W=1 runs"):
        calibrate_pilot(_profile(), [(1, 10.0), (2, 18.0)], _hw(), "allreduce", "sync")


def test_cli_pilot_writes_the_fitted_file_and_never_overwrites(tmp_path, capsys):
    prof, hw_path, out = tmp_path / "p.json", tmp_path / "hw.json", tmp_path / "cal.json"
    save_profile(_profile(), str(prof))
    from sgdsim.hardware import save_hardware
    save_hardware(_hw(), str(hw_path))
    pilot = tmp_path / "pilot.csv"
    rows = [(W, _truth(W, 0.9 * B_bps, 0.0)) for W in (1, 2)]
    pilot.write_text("workers,throughput\n" + "".join(f"{w},{x}\n" for w, x in rows))
    argv = ["calibrate", str(prof), "--pilot", str(pilot), "--hardware", str(hw_path), "--mode",
            "sync", "-o", str(out)]
    assert main(argv) == 0
    fit = calibrate_pilot(_profile(), rows, _hw(), "ps", "sync")
    assert f"goodput {fit.bandwidth_bps / 1e6:.4g} Mbit/s" in capsys.readouterr().out
    cal = load_hardware(str(out))
    assert cal.bandwidth_bps == fit.bandwidth_bps and 0.9 * B_bps < cal.bandwidth_bps < B_bps
    assert sorted(cal.measured["calibration"]["pilot"]) == ["1", "2"]
    before = out.read_bytes()
    assert main(argv) == 2 and out.read_bytes() == before
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize("extra, ok", [
    ('calibrate = true\npilot = "1,2"', True),
    ('calibrate = true\npilot = "1"', False),
    ('calibrate = true\npilot = "1,8"', False),
    ('pilot = "1,2"', False),
])
def test_a_grid_s_pilot_is_two_of_its_worker_counts_with_calibration(tmp_path, extra, ok):
    from sgdsim.validate.grid import load_grid

    grid = tmp_path / "g.toml"
    grid.write_text('[[case]]\nmodel = "lab:mlp-5mb"\nbatch_size = 16\nbandwidth = "100Mbps"\n'
                    f'workers = "1,2,4"\n{extra}\n')
    if ok:
        assert load_grid(str(grid)).cases[0].pilot == (1, 2)
    else:
        with pytest.raises(ConfigError, match="'pilot' lists two or more"):
            load_grid(str(grid))


def test_a_grid_s_all_reduce_pilot_starts_at_two_ranks(tmp_path):
    from sgdsim.validate.grid import load_grid

    grid = tmp_path / "g.toml"
    grid.write_text('[[case]]\nmodel = "lab:mlp-5mb"\nbatch_size = 16\nbandwidth = "100Mbps"\n'
                    'arch = "allreduce"\nmode = "sync"\nworkers = "1,2,4"\ncalibrate = true\npilot = "1,2"\n')
    with pytest.raises(ConfigError, match="'pilot': an allreduce pilot needs runs at 2 or more workers"):
        load_grid(str(grid))
    grid.write_text(grid.read_text().replace('pilot = "1,2"', 'pilot = "2,4"'))
    assert load_grid(str(grid)).cases[0].pilot == (2, 4)


def test_a_pilot_calibrated_file_widens_every_interval_by_its_fit(tmp_path):
    """The file's fit uncertainty u = 1.96·sd(log B) joins the model's error in quadrature, for
    the fine and the coarse model alike; a file without a pilot adds nothing."""
    from sgdsim.spec.control import COARSE_ERROR_BY_LEVEL, MODEL_ERROR_REL

    clean = [(W, _truth(W, 0.9 * B_bps, 2e-9)) for W in (1, 2)]
    fit = calibrate_pilot(_profile(), [(W, x * f) for W, x in clean for f in (0.95, 1.05)],
                          _hw(), "ps", "sync")
    u = 1.96 * fit.sd_log_bandwidth
    assert u > 0.02 and fit.hardware.fit_uncertainty_rel == pytest.approx(u)
    assert _hw().fit_uncertainty_rel == 0.0
    net = fit.hardware.predict_kwargs("ps", "sync")
    for model, error in (("fine", MODEL_ERROR_REL), ("coarse", COARSE_ERROR_BY_LEVEL[0.95])):
        kw = dict(workers=[2], mode="sync", model=model,
                  **(dict(replications=1, steps=50) if model == "fine" else {}))
        raw = sgdsim.predict(_profile(), **{**net, "model_error": 0, "fit_uncertainty": 0.0}, **kw)
        got = sgdsim.predict(_profile(), **net, **kw)
        r, g = raw[0], got[0]
        p = r.throughput
        h = (r.ci_high - p) / p
        assert g.ci_high == pytest.approx(p * (1 + math.hypot(h, math.hypot(error, u))), rel=1e-9)


def _ring_truth(W, bw_bps, alpha):
    return sgdsim.predict(_profile(), workers=[W], arch="allreduce", mode="sync", bandwidth=bw_bps,
                          overhead_alpha=alpha, replications=1, steps=200, model_error=0.0)[0].throughput


def test_an_all_reduce_pilot_does_not_split_link_and_cpu_and_needs_not_to():
    """The ring pays α and 1/B per byte alike, so any split that fits W = 2 predicts every W
    the same: the fit's uncertainty is 0, not the infinity of a flat objective."""
    runs = [(W, _ring_truth(W, 0.9 * B_bps, 2e-9)) for W in (2, 4)]
    fit = calibrate_pilot(_profile(), runs, _hw(), "allreduce", "sync")
    assert fit.sd_log_bandwidth == 0.0 and fit.hardware.fit_uncertainty_rel == 0.0
    (w, x, u), = extrapolate(fit, _profile(), _hw(), "allreduce", "sync", [8])
    assert x == pytest.approx(_ring_truth(8, 0.9 * B_bps, 2e-9), rel=1e-3) and u == 0.0


class _Flat:
    """A model whose pilot counts (W <= 2) do not depend on B but larger counts do."""

    def log_x(self, W, b):
        return 0.0 if W <= 2 else math.log(b)


def test_a_pilot_that_does_not_pin_what_larger_counts_need_is_refused():
    from sgdsim.calibrate_pilot import _sd_log_bandwidth

    with pytest.raises(ConfigError, match="add runs at a larger worker count"):
        _sd_log_bandwidth(_Flat(), 1e8, [(0.0, 0.02)], 0.0, 2)
    assert _sd_log_bandwidth(_Flat(), 1e8, [(0.5, 0.02)], 0.0, 2) == pytest.approx(0.04)
    # a prior's precision p adds to the runs': 1 / sqrt((0.5 / 0.02)² + p)
    assert _sd_log_bandwidth(_Flat(), 1e8, [(0.5, 0.02)], 200.0, 2) == pytest.approx(1 / math.sqrt(825))


def test_the_search_for_b_finds_the_deeper_of_two_minima():
    """An async point's throughput can jump with B, so the objective can have two wells:
    golden section alone settles into the first it brackets; the grid first finds the deeper."""
    from sgdsim.calibrate_pilot import _golden, _search

    def f(x):
        return min((x - 0.2) ** 2 + 0.02, 3 * (x - 0.85) ** 2)

    assert _golden(f, 0.0, 1.0, 30, lambda i, n: None) == pytest.approx(0.2, abs=1e-3)
    seen = []
    assert _search(f, 0.0, 1.0, lambda i, n: seen.append((i, n))) == pytest.approx(0.85, abs=1e-3)
    assert seen[-1][0] == seen[-1][1]  # progress reaches its end
    # the CLI's bar is sized by SEARCH_STEPS: every call counts one of them, none beyond
    from sgdsim.calibrate_pilot import SEARCH_STEPS
    assert [i for i, _ in seen] == list(range(1, SEARCH_STEPS + 1)) and {n for _, n in seen} == {SEARCH_STEPS}


def test_the_smallest_count_weighs_in_when_even_no_cpu_is_too_slow_there():
    """W = 1 ran 3 % faster than the model allows at B* with α = 0: fitting B to the other
    counts alone (B*) leaves W = 1 3 % off; the joint fit trades the errors and its summed
    squared log-error is the smaller."""
    B = 0.9 * B_bps
    runs = [(W, _truth(W, B, 0.0) * (1.03 if W == 1 else 1.0)) for W in (1, 2, 4)]
    fit = calibrate_pilot(_profile(), runs, _hw(), "ps", "sync")
    assert fit.alpha_s_per_byte == 0.0

    def sse(b):
        return sum(math.log(_truth(W, b, 0.0) / x) ** 2 for W, x in runs)

    res = dict(fit.residuals_pct)
    assert fit.bandwidth_bps > B * 1.001 and -3.0 < res[1] < -0.1 and res[2] > 0.0
    assert sse(fit.bandwidth_bps) < sse(B)
