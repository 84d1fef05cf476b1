"""Replications that stop at the cap or the op budget say so: ResNet-50 async at 1 Gbit/s, W = 2.

Each replication's throughput is set by its start offset (two async workers keep the offset
they start with), so the runs spread from about 79 to 151 examples/s and longer runs give the
same values: the ±2 % target on the mean would need hundreds of runs. The point carries a note
with the precision it reached instead of passing for converged.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import sgdsim
import sgdsim.cli
from conftest import example
from sgdsim import replicate
from sgdsim.point import PredictionPoint
from sgdsim.sim.stats import mean_half_width


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


def test_a_capped_point_carries_its_precision_and_why_it_stopped(monkeypatch):
    pt, xs = _reps(monkeypatch)
    rel = float(mean_half_width(np.array(xs))) / float(np.mean(xs))
    assert pt.mean_half_width_rel == rel and rel > replicate.REL_TARGET
    assert pt.rounds_stopped == replicate.CAP
    assert f"±{replicate._percent(rel)}" in pt.regime  # the words say the same


def test_a_converged_point_has_a_precision_within_the_target_and_no_stop():
    pt = sgdsim.predict(example("resnet50"), workers=4, bandwidth=1e9, mode="sync")[0]
    assert pt.rounds_stopped == "" and pt.mean_half_width_rel <= replicate.REL_TARGET


def _row(w, why, rel, runs=16, model="fine"):
    return dict(workers=w, model=model, rounds_stopped=why, mean_half_width_rel=rel, replications=runs)


def test_stopped_points_are_one_line_per_reason_with_their_worker_counts_and_precisions():
    rows = [_row(2, replicate.CAP, 0.116), _row(3, replicate.CAP, 0.052), _row(4, "", 0.01),
            _row(5, replicate.CAP, 0.022), _row(6, replicate.BUDGET, 0.05, runs=8),
            _row(7, replicate.CAP, 0.3, model="coarse"), _row(9, replicate.UNCONFIRMED, 0.01, runs=4)]
    cap, budget, one = replicate.stop_notes(rows)
    assert cap.startswith("W=2-3, 5: means known to ±2.2% to ±11.6%, short of the ±2% target after 16 runs "
                          "each, the most it runs")
    assert budget.startswith("W=6: mean known to ±5.0%, short of the ±2% target after 8 runs: the op budget "
                             "stopped the rounds")
    assert one.startswith("W=9: mean known to ±1.0% from 4 runs, one round")
    assert replicate.stop_notes([_row(4, "", 0.01)]) == []


def test_the_table_says_it_once_for_a_sweep(capsys):
    profile = Path(__file__).resolve().parent.parent / "examples" / "profiles" / "resnet50.json"
    assert sgdsim.cli.main(["predict", str(profile), "--workers", "2,3",
                            "--bandwidth", "1Gbps", "--steps", "20"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "the most it runs" in line]
    assert len(notes) == 1 and notes[0].startswith("W=2-3: means known to ±")
