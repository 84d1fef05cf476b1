"""Replications that stop at the cap or the op budget say so: ResNet-50 async at 1 Gbit/s, W = 2.

Each replication's throughput is set by its start offset (two async workers keep the offset
they start with), so the runs spread from about 79 to 151 examples/s and longer runs give the
same values: the ±2 % target on the mean would need hundreds of runs. The point carries a note
with the precision it reached instead of passing for converged.
"""
from __future__ import annotations

import sgdsim
from conftest import example
from sgdsim import replicate
from sgdsim.point import PredictionPoint


def _reps(monkeypatch, **kw):
    seen = []
    orig = replicate._combine
    monkeypatch.setattr(replicate, "_combine", lambda reps: seen.append(reps) or orig(reps))
    pt = sgdsim.predict(example("resnet50"), workers=2, bandwidth=1e9, **kw)[0]
    return pt, [r.throughput for r in seen[0]]


def test_the_spread_is_between_start_offsets_not_too_short_runs(monkeypatch):
    short = _reps(monkeypatch, steps=50, replications=4)[1]
    long = _reps(monkeypatch, steps=500, replications=4)[1]
    assert max(short) > 1.3 * min(short)
    assert [round(x, 6) for x in short] == [round(x, 6) for x in long]


def test_a_point_that_hits_the_cap_says_the_target_was_not_met(monkeypatch):
    pt, xs = _reps(monkeypatch)
    assert len(xs) == replicate.ROUND * replicate.MAX_ROUNDS
    assert "target ±2% not met after 16 runs" in pt.regime
    assert pt.ci_low <= min(xs) and max(xs) <= pt.ci_high  # the interval holds every run


def test_a_converged_point_has_no_note():
    pt = sgdsim.predict(example("resnet50"), workers=2, bandwidth=1e9, mode="sync")[0]
    assert pt.regime == ""


def _points(values):
    return [PredictionPoint(workers=2, throughput=x, ci_low=x, ci_high=x, step_time_s=1.0,
                            ops_simulated=1, bottleneck="none", utilization={}, steps_measured=1,
                            wall_s=0.0) for x in values]


def test_a_tight_round_the_budget_stopped_is_not_called_unmet():
    note = replicate._not_met(_points([100.0, 100.4, 99.7, 100.1]), budget_stop=True)
    assert "not met" not in note
    assert "from 4 runs, one round" in note and "op budget" in note


def test_a_wide_round_the_budget_stopped_says_what_stopped_it():
    note = replicate._not_met(_points([90.0, 110.0, 95.0, 105.0, 100.0, 92.0, 108.0, 99.0]),
                              budget_stop=True)
    assert "target ±2% not met after 8 runs: the op budget stopped the rounds" in note


def test_a_precision_just_above_the_target_is_not_printed_as_the_target():
    assert replicate._percent(0.0204) == "2.04%"
    assert replicate._percent(0.116) == "11.6%"
    assert replicate._percent(0.008) == "0.8%"
