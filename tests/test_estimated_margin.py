"""An estimated profile's own error is in its prediction's interval, and the interval says so
(issue 39: "a prediction from a fully estimated profile still says ±10.4 %, measured on lab
runs"): the step error is the time-weighted error of its operators' sources."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sgdsim import predict
from sgdsim.evaluate.margin import ESTIMATED_DEFAULT_REL, profile_error_rel
from sgdsim.ops.estimate import FALLBACK_ERROR_REL, Timed, step_error_rel
from sgdsim.spec.control import MODEL_ERROR_REL

from conftest import example


class Est:
    def __init__(self, err):
        self.stats = {"validation_error": err}


def test_the_step_error_is_the_time_weighted_error_of_each_call_s_source():
    timed = Timed(fwd=np.array([1.0, 2.0, 3.0, 4.0]), bwd=np.array([1.0, 0.0, 1.0, 0.0]),
                  source=["measured", "estimated", "estimated", "fallback"], ops=["mm", "mm", "relu", "cat"])
    estimators = {("mm", "float32"): Est(0.2), ("relu", "float32"): Est(0.1)}
    expected = (2 * 0.0 + 2 * 0.2 + 4 * 0.1 + 4 * FALLBACK_ERROR_REL) / 12
    assert step_error_rel(timed, estimators) == pytest.approx(expected, rel=1e-12)


def test_a_measured_profile_has_no_estimate_error_and_an_old_estimated_one_a_stated_default():
    prof = example("alexnet-nooverlap")
    assert profile_error_rel(prof) == 0.0
    old = replace(prof, extra={"estimated": {"time_fraction_measured": 0.25}})
    assert profile_error_rel(old) == pytest.approx(0.75 * ESTIMATED_DEFAULT_REL)
    new = replace(prof, extra={"estimated": {"time_fraction_measured": 0.25, "step_error_rel": 0.17}})
    assert profile_error_rel(new) == 0.17


def test_the_interval_of_an_estimated_profile_holds_its_error_and_names_it():
    prof = example("alexnet-nooverlap")
    est = replace(prof, extra={"estimated": {"step_error_rel": 0.3}})
    (plain,) = predict(prof, workers="1", bandwidth="10Gbps")
    (wide,) = predict(est, workers="1", bandwidth="10Gbps")
    assert wide.throughput == plain.throughput
    assert wide.model_error_rel == pytest.approx(math.hypot(MODEL_ERROR_REL, 0.3), rel=1e-12)
    assert "estimated profile's ±30.0%" in wide.margin_source
    (bare,) = predict(est, workers="1", bandwidth="10Gbps", model_error=0)  # the simulator's spread alone
    assert bare.model_error_rel == 0 and bare.ci_high - bare.ci_low < wide.ci_high - wide.ci_low
