"""The roofline prior the estimator may correct: it travels with the estimator's JSON, a bad
one is refused in one line, and on an operator whose time is a roofline plus noise the
corrected estimator lands within the noise, also beyond the sizes it was trained on."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.errors import ConfigError
from sgdsim.ops.estimator.model import OpEstimator, evaluate, train
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
