"""The roofline prior the estimator may correct: it travels with the estimator's JSON, a bad
one is refused in one line, and on an operator whose time is a roofline plus noise the
corrected estimator lands within the noise, also beyond the sizes it was trained on."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sgdsim.errors import ConfigError
from sgdsim.ops.estimator.evaluation import evaluate
from sgdsim.ops.estimator.model import OpEstimator, train
from sgdsim.ops.estimator.prior import prior_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")
FIXED_S, BYTES_PER_S = 3e-6, 4e9


def relu_rows(sizes, rng, noise=0.03):
    """relu's time: a fixed cost plus its bytes (read and write, 4 bytes each) at 4 GB/s,
    times log-normal noise of ``noise``."""
    rows = []
    for n in sizes:
        fwd = (FIXED_S + 8 * n / BYTES_PER_S) * np.exp(noise * rng.standard_normal())
        rows.append(OpRecord(DEV, "relu", {"numel": int(n), "gi": 1}, "float32", fwd, 2 * fwd, 5, 0.0, 0.0, 1.0))
    return rows


def test_a_corrected_roofline_lands_within_the_noise_and_extrapolates():
    rng = np.random.default_rng(0)
    train_rows = relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 60)).astype(int), rng)
    est = train(train_rows, REGISTRY["relu"].shape_dims, np.random.default_rng(1), 2.0, use_prior=True,
                clock_stop=False)
    assert est.prior is not None
    inside = evaluate(est, relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 30)).astype(int), rng))
    beyond = evaluate(est, relu_rows([4e6, 1.6e7, 6.4e7], rng, noise=0.0))  # 4-64x the largest trained
    assert inside["fwd_median"] < 0.05 and beyond["fwd_max"] < 0.10


def test_a_networks_correction_holds_still_beyond_the_grid():
    """Past the largest size trained on, the estimate is the prior times the correction at
    that size: the network is not asked where it has seen nothing."""
    rng = np.random.default_rng(4)
    rows = relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 40)).astype(int), rng, noise=0.1)
    est = train(rows, REGISTRY["relu"].shape_dims, np.random.default_rng(5), 1.0, use_prior=True, clock_stop=False)
    assert est.prior is not None and not est.quadratic
    edge = max(r.params["numel"] for r in rows)
    params = [{"numel": n, "gi": 1} for n in (edge, 4 * edge, 1000 * edge)]
    fwd, bwd = est.predict(params)
    base = prior_times("relu", "float32", params, est.prior)
    assert np.allclose(fwd / base[:, 0], fwd[0] / base[0, 0], rtol=1e-9)
    assert np.allclose(bwd / base[:, 1], bwd[0] / base[0, 1], rtol=1e-9)
    inside = [{"numel": n, "gi": 1} for n in (edge // 8, edge // 2)]  # and not inside it
    f_in, _ = est.predict(inside)
    assert not np.isclose(f_in[0] / prior_times("relu", "float32", inside, est.prior)[0, 0],
                          f_in[1] / prior_times("relu", "float32", inside, est.prior)[1, 0], rtol=1e-6)


def test_the_prior_travels_with_the_json_and_a_bad_one_is_refused():
    rng = np.random.default_rng(2)
    rows = relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 30)).astype(int), rng)
    est = train(rows, REGISTRY["relu"].shape_dims, np.random.default_rng(3), 1.0, use_prior=True, clock_stop=False)
    again = OpEstimator.from_json(est.to_json())
    params = [{"numel": 5000, "gi": 1}, {"numel": 123456, "gi": 1}]
    assert np.allclose(again.predict(params), est.predict(params), rtol=1e-12)
    base = prior_times("relu", "float32", params, est.prior)
    assert np.all(base[:, 0] >= est.prior["fwd"][0])  # never below the fixed cost
    text = est.to_json().replace('"prior": {"bwd"', '"prior": {"sideways"')
    with pytest.raises(ConfigError, match="not a valid sgdsim operator estimator: prior must name fwd and bwd"):
        OpEstimator.from_json(text)


def curved_relu_rows(sizes, rng, noise=0.02, bend=0.02):
    """relu_rows' roofline times exp(bend (ln n - ln 3e4)^2): a curvature in log size that the
    roofline misses and a quadratic in the log inputs describes exactly."""
    out = []
    for r in relu_rows(sizes, rng, noise):
        fwd = r.fwd_s * float(np.exp(bend * (np.log(r.params["numel"]) - np.log(3e4)) ** 2))
        out.append(dataclasses.replace(r, fwd_s=fwd, bwd_s=2 * fwd))
    return out


def test_the_fitted_ridge_recovers_a_quadratic_and_picks_its_penalty_on_validation():
    from sgdsim.ops.estimator.search import QUADRATIC, RIDGE_PENALTIES, Fitter

    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, (40, 3))
    y = (0.5 + x @ [0.3, -0.2, 0.1] + 0.05 * x[:, 0] * x[:, 1])[:, None]
    feats = np.hstack([x, (x[:, :, None] * x[:, None, :]).reshape(40, -1)])
    fitter = Fitter(y, np.exp(y), np.ones_like(y, bool), np.arange(8, 40), np.arange(8), 1.0)
    trial = fitter.fit_ridge(feats)
    assert trial.arch == QUADRATIC and trial.alpha == min(RIDGE_PENALTIES)  # no noise: least penalty
    assert trial.err < 0.01 and fitter.planned == 0.0  # closed form: off the networks' budget


def test_the_quadratic_replaces_the_network_only_beside_a_prior_and_when_it_scores_lower():
    from sgdsim.ops.estimator.features import layout_of
    from sgdsim.ops.estimator.model import _quadratic_if_better
    from sgdsim.ops.estimator.search import QUADRATIC, Fitter, Trial

    rng = np.random.default_rng(7)
    rows = curved_relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 30)).astype(int), rng)
    params = [r.params for r in rows]
    layout = layout_of(params, REGISTRY["relu"].shape_dims)
    y = np.log([[r.fwd_s] for r in rows])
    fitter = Fitter(y, np.exp(y), np.ones_like(y, bool), np.arange(6, 30), np.arange(6), 1.0)

    def net(err):
        return Trial(err, (6, 6), 1e-4, 0, None, None)

    prior = {"fwd": [1e-6, 1e9], "bwd": [1e-6, 1e9]}
    assert _quadratic_if_better(fitter, net(np.inf), params, layout, None, prior).arch == QUADRATIC
    assert _quadratic_if_better(fitter, net(0.0), params, layout, None, prior).arch == (6, 6)
    assert _quadratic_if_better(fitter, net(np.inf), params, layout, None, None).arch == (6, 6)


def test_a_quadratic_correction_holds_at_the_grid_s_edge_and_travels_with_the_json():
    rng = np.random.default_rng(3)  # a draw on which validation picks the quadratic (2 of 5 do)
    sizes = np.exp(rng.uniform(np.log(1e3), np.log(1e6), 40)).astype(int)
    est = train(curved_relu_rows(sizes, rng), REGISTRY["relu"].shape_dims, np.random.default_rng(6), 1.0,
                use_prior=True, clock_stop=False)
    assert est.quadratic and est.stats["arch"] == "quad"
    inside = evaluate(est, curved_relu_rows(np.exp(rng.uniform(np.log(1e3), np.log(1e6), 30)).astype(int), rng))
    assert inside["fwd_median"] < 0.03
    # beyond the largest size trained, the correction holds its edge value: the prior scales
    top = max(int(s) for s in sizes)
    params = [{"numel": top, "gi": 1}, {"numel": 4 * top, "gi": 1}, {"numel": 64 * top, "gi": 1}]
    ratio = est.predict(params)[0] / prior_times("relu", "float32", params, est.prior)[:, 0]
    assert ratio == pytest.approx(np.full(3, ratio[0]), rel=1e-9)
    again = OpEstimator.from_json(est.to_json())
    assert again.quadratic and np.allclose(again.predict(params), est.predict(params), rtol=1e-12)
    plain = est.to_json().replace('"quadratic": true, ', '')
    with pytest.raises(ConfigError, match="not a valid sgdsim operator estimator"):
        OpEstimator.from_json(plain)  # the weights no longer match a network's inputs
