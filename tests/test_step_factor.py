"""A device's step factor: what its timed model steps cost beyond their calls' sum, and an
estimated profile scaled by it (sgdsim.ops.step_factor)."""
from __future__ import annotations

import json

import pytest

from sgdsim.ops.records import Device, OpRecord
from sgdsim.ops.step_factor import FEW_STEPS_SPREAD_REL, device_factor, factor_of


def step(model: str, step_s: float, calls_s: float, device: str = "cpu (test)") -> dict:
    return {"device": device, "model": model, "batch_size": 4, "dtype": "float32",
            "step_s": step_s, "calls_s": calls_s, "measured_at": 0.0}


def test_the_factor_is_the_median_ratio_and_its_spread_the_median_deviation():
    rows = [step("a", 1.1, 1.0), step("b", 2.4, 2.0), step("c", 0.5, 0.5), step("d", 3.9, 3.0)]
    f = factor_of(rows)  # ratios 1.1, 1.2, 1.0, 1.3: median 1.15
    assert f.factor == pytest.approx(1.15) and (f.low, f.high, f.steps) == (pytest.approx(1.0), 1.3, 4)
    # |1.1/1.15-1| = .0435, |1.2/1.15-1| = .0435, |1/1.15-1| = .1304, |1.3/1.15-1| = .1304
    assert f.spread_rel == pytest.approx((0.05 / 1.15 + 0.15 / 1.15) / 2)


def test_too_few_steps_claim_no_less_spread_than_the_committed_tables_show():
    f = factor_of([step("a", 1.2, 1.0)])
    assert f.factor == pytest.approx(1.2) and f.spread_rel == FEW_STEPS_SPREAD_REL
    assert factor_of([]) is None
    assert "±8%" in f.line() and "median of 1 model step" in f.line()


class StepsDB:
    """Every call an exact hit (1 ms forward, 2 ms backward); the steps given."""

    def __init__(self, steps):
        self.steps = steps

    def lookup(self, device, keys):
        return {k: OpRecord(Device(device, "cpu"), k[0], json.loads(k[1]), k[2], 1e-3, 2e-3)
                for k in keys}

    def load(self, **_):
        return []

    def load_estimators(self, device):
        return {}

    def load_steps(self, device=None, dtype=None):
        return [s for s in self.steps if device in (None, s["device"]) and dtype in (None, s["dtype"])]


def test_a_model_left_out_does_not_count():
    db = StepsDB([step("zoo:a", 1.5, 1.0), step("zoo:b", 1.1, 1.0), step("zoo:c", 1.2, 1.0)])
    assert device_factor(db, "cpu (test)", "float32").factor == pytest.approx(1.2)
    assert device_factor(db, "cpu (test)", "float32", leave_out="zoo:b").factor == pytest.approx(1.35)
    assert device_factor(db, "another", "float32") is None
    assert device_factor(db, "cpu (test)", "bfloat16") is None


def test_an_estimated_profile_is_its_calls_sum_times_the_factor():
    pytest.importorskip("torch")
    from sgdsim.ops.estimate import estimate_profile
    from sgdsim.ops.step_factor import profile_step_s

    spec, device = "zoo:mlp?width=16&depth=2&inputs=8&classes=2", "cpu (test)"
    plain = estimate_profile(spec, 4, StepsDB([]), device, step_factor=True)
    steps = StepsDB([step("zoo:x", 1.25, 1.0), step("zoo:y", 1.45, 1.0), step("zoo:z", 1.05, 1.0)])
    scaled = estimate_profile(spec, 4, steps, device, step_factor=True)
    assert estimate_profile(spec, 4, steps, device).extra["estimated"]["step_factor"] is None  # the default
    before, after = plain.extra["estimated"], scaled.extra["estimated"]
    assert before["step_factor"] is None and after["step_factor"]["factor"] == pytest.approx(1.25)
    assert profile_step_s(scaled) == pytest.approx(1.25 * profile_step_s(plain), rel=1e-12)
    assert scaled.mean_compute_s() == pytest.approx(1.25 * plain.mean_compute_s(), rel=1e-12)
    spread = after["step_factor"]["spread_rel"]  # |1.45/1.25-1| = |1.05/1.25-1| = 0.16, and 0
    assert spread == pytest.approx(0.16)
    assert after["step_error_rel"] == pytest.approx((before["step_error_rel"] ** 2 + 0.16 ** 2) ** 0.5)
    unscaled = estimate_profile(spec, 4, StepsDB([step("zoo:x", 2.0, 1.0)]), device, step_factor=False)
    assert profile_step_s(unscaled) == pytest.approx(profile_step_s(plain), rel=1e-12)
