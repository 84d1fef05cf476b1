"""Bias, not only error: the signed error per model and per worker count (evaluate/bias.py), as
summary.md/.json, the bias plot and the lab scripts report it. Every figure here is computed
by hand; nothing needs torch, root or the lab."""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from sgdsim.analytic.coarse_profile import parse_coarse
from sgdsim.validate import CaseResult, Point, ValidationResult, load_grid, run_validation
from sgdsim.evaluate.bias import (Bias, bias_by_model, bias_by_workers, by_workers_json,
                                  by_workers_table, error_pct, errors_by_workers)
from sgdsim.validate.report import summary_dict, summary_markdown, write_summary
from conftest import LAB_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
PNG = b"\x89PNG\r\n\x1a\n"

# (model, workers, measured, predicted) -> error = predicted / measured - 1
POINTS = [
    ("fine", 2, 100.0, 110.0),     # +10
    ("fine", 2, 100.0, 95.0),      # -5
    ("fine", 4, 50.0, 45.0),       # -10
    ("fine", 4, None, 60.0),       # unmeasured: ignored
    ("coarse", 8, 40.0, 40.0),     # 0: not too high
    ("coarse", 2, 200.0, 210.0),   # +5
    ("coarse", 4, 0.0, 10.0),      # nothing measured: ignored
    ("lin", 8, 80.0, 100.0),       # +25
]


def test_error_is_predicted_over_measured_minus_one():
    assert error_pct(80.0, 100.0) == pytest.approx(25.0)
    assert error_pct(100.0, 90.0) == pytest.approx(-10.0)
    assert error_pct(None, 1.0) is None and error_pct(0.0, 1.0) is None
    assert error_pct(float("nan"), 1.0) is None and error_pct(1.0, None) is None


def test_bias_by_model_hand_computed():
    b = bias_by_model(POINTS)
    assert list(b) == ["fine", "coarse", "lin"]  # the CLI's model order
    fine = b["fine"]
    assert fine.points == 3 and fine.too_high == 1
    assert fine.signed_mean_error_pct == pytest.approx((10 - 5 - 10) / 3)
    assert fine.mean_abs_error_pct == pytest.approx(25 / 3)
    assert fine.max_abs_error_pct == pytest.approx(10.0)
    assert b["coarse"] == Bias(points=2, mean_abs_error_pct=pytest.approx(2.5), max_abs_error_pct=pytest.approx(5.0),
                               signed_mean_error_pct=pytest.approx(2.5), too_high=1)
    assert (b["lin"].points, b["lin"].too_high) == (1, 1)
    assert b["lin"].signed_mean_error_pct == pytest.approx(25.0)


def test_bias_by_workers_groups_each_model_by_w():
    by_w = bias_by_workers(POINTS)
    assert {m: list(rows) for m, rows in by_w.items()} == {"fine": [2, 4], "coarse": [2, 8], "lin": [8]}
    f2, f4 = by_w["fine"][2], by_w["fine"][4]
    assert (f2.points, f2.too_high) == (2, 1)
    assert f2.signed_mean_error_pct == pytest.approx(2.5) and f2.mean_abs_error_pct == pytest.approx(7.5)
    assert (f4.points, f4.too_high) == (1, 0) and f4.signed_mean_error_pct == pytest.approx(-10.0)
    assert by_w["coarse"][8].signed_mean_error_pct == 0.0 and by_w["coarse"][8].too_high == 0
    assert errors_by_workers(POINTS)["fine"] == {2: [pytest.approx(10.0), pytest.approx(-5.0)],
                                                 4: [pytest.approx(-10.0)]}
    rows = by_workers_json(by_w)["fine"]
    assert [r["workers"] for r in rows] == [2, 4] and rows[0]["points"] == 2


def test_nothing_measured_gives_nothing():
    unmeasured = [("fine", 2, None, 10.0), ("coarse", 4, 0.0, 3.0)]
    assert bias_by_model(unmeasured) == {} and bias_by_workers(unmeasured) == {}
    assert by_workers_table({}) == []


def test_by_workers_table():
    lines = by_workers_table(bias_by_workers(POINTS))
    assert lines[0].startswith("| W | fine: signed / mean")
    assert lines[2:] == ["| 2 | +2.5 % / 7.5 % (2) | +5.0 % / 5.0 % (1) | - |",
                         "| 4 | -10.0 % / 10.0 % (1) | - | - |",
                         "| 8 | - | +0.0 % / 0.0 % (1) | +25.0 % / 25.0 % (1) |"]


# ----------------------------------------------------------------------------- summary

GRID = f"""
description = "bias test"
{LAB_DEFAULTS}[[case]]
name = "a"
workers = [1, 2, 4]
[[case]]
name = "b"
arch = "allreduce"
mode = "sync"
overlap = true
workers = [2, 4]
"""


def hand_result(tmp_path) -> ValidationResult:
    """Fine: +25, -10 (a), -10 (b W=4); a's W=4 unmeasured, b's fine W=2 a fit. Coarse: +25, 0
    (a), +20, +10 (b)."""
    path = tmp_path / "grid.toml"
    path.write_text(GRID, encoding="utf-8")
    grid = load_grid(path)
    a = CaseResult(grid.cases[0], [Point("a", "fine", 1, 100.0), Point("a", "fine", 2, 90.0),
                                   Point("a", "fine", 4, 300.0), Point("a", "coarse", 1, 100.0),
                                   Point("a", "coarse", 2, 100.0), Point("a", "coarse", 4, 300.0)],
                   measured_runs={1: [80.0], 2: [99.0, 101.0]})
    b = CaseResult(grid.cases[1], [Point("b", "fine", 2, 100.0, fitted=True), Point("b", "fine", 4, 180.0),
                                   Point("b", "coarse", 2, 120.0), Point("b", "coarse", 4, 220.0)],
                   measured_runs={2: [100.0], 4: [190.0, 210.0]})
    for cr in (a, b):
        cr.points = [replace(p, measured=cr.measured.get(p.workers)) for p in cr.points]
    return ValidationResult(grid=grid, cases=[a, b], dry_run=False, files=[])


def test_summary_json_has_signed_mean_too_high_and_error_by_w(tmp_path):
    d = summary_dict(hand_result(tmp_path))
    assert d["format"] == "sgdsim-validation-summary" and d["version"] == 1  # readers unchanged
    fine, coarse = d["overall"]["fine"], d["overall"]["coarse"]
    assert fine["points"] == 3 and fine["too_high"] == 1
    assert fine["signed_mean_error_pct"] == pytest.approx(5 / 3)
    assert fine["mean_abs_error_pct"] == pytest.approx(15.0) and fine["max_abs_error_pct"] == pytest.approx(25.0)
    assert coarse["points"] == 4 and coarse["too_high"] == 3
    assert coarse["signed_mean_error_pct"] == pytest.approx(13.75)
    by_w = d["error_by_workers"]
    assert [(r["workers"], r["points"], r["too_high"]) for r in by_w["coarse"]] == [(1, 1, 1), (2, 2, 1), (4, 1, 1)]
    assert by_w["coarse"][1]["signed_mean_error_pct"] == pytest.approx(10.0)
    assert by_w["coarse"][1]["max_abs_error_pct"] == pytest.approx(20.0)
    assert [r["signed_mean_error_pct"] for r in by_w["fine"]] == [pytest.approx(25), pytest.approx(-10),
                                                                   pytest.approx(-10)]
    assert d["cases"][1]["errors"]["fine"]["points"] == 1  # the fit is left out per case too
    json.dumps(d)


def test_summary_markdown_has_the_new_figures(tmp_path):
    md = summary_markdown(hand_result(tmp_path))
    assert "| fine | 3 | 15.0 % | 25.0 % | +1.7 % | 1 of 3 | - |" in md
    assert "| coarse | 4 | 13.8 % | 25.0 % | +13.8 % | 3 of 4 | - |" in md
    assert "| a | coarse | 2 | 12.5 % | 25.0 % | +12.5 % | 1 of 2 | - |" in md
    assert "## Error by W" in md and "![error by W](plots/bias_by_workers.png)" in md
    assert "| 1 | +25.0 % / 25.0 % (1) | +25.0 % / 25.0 % (1) |" in md
    assert "| 2 | -10.0 % / 10.0 % (1) | +10.0 % / 10.0 % (2) |" in md
    assert "| 4 | -10.0 % / 10.0 % (1) | +10.0 % / 10.0 % (1) |" in md


def test_write_summary_writes_the_bias_plot(tmp_path):
    result = hand_result(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    write_summary(result, str(out))
    assert (out / "plots" / "bias_by_workers.png").read_bytes()[:8] == PNG
    assert json.loads((out / "summary.json").read_text())["overall"]["fine"]["too_high"] == 1


def test_full_run_reports_the_bias_it_measured(tmp_path):
    """A full run (as tests/test_validate.py runs one) with a fake lab whose measurements are the fine prediction / (1 + e_W): the
    fine errors are e_W exactly."""
    profile = parse_coarse("size=2MB,fwd=20ms,bwd=40ms,batch=16")
    err = {1: -0.20, 2: 0.25, 3: 0.0, 4: 1.0}
    from sgdsim.validate import predict_case

    def measure(case, workers, lab):
        fine = {p.workers: p.predicted for p in predict_case(case, profile, ("fine",))[0]}
        return fine[workers] / (1 + err[workers])

    path = tmp_path / "grid.toml"
    path.write_text(GRID.replace("[1, 2, 4]", '"1-3"'), encoding="utf-8")
    run_validation(load_grid(path), str(tmp_path / "out"), models="fine,coarse", profile_fn=lambda c: profile,
                   measure_fn=measure, lab_fn=lambda c: __import__("contextlib").nullcontext(), log=lambda m: None)
    out = tmp_path / "out"
    d = json.loads((out / "summary.json").read_text())
    fine = d["overall"]["fine"]  # errors -20, +25, 0 (a) and +25, +100 (b)
    assert fine["points"] == 5 and fine["too_high"] == 3
    assert fine["signed_mean_error_pct"] == pytest.approx(26.0)
    assert [(r["workers"], r["points"], round(r["signed_mean_error_pct"], 6)) for r in d["error_by_workers"]["fine"]] \
        == [(1, 1, -20.0), (2, 2, 25.0), (3, 1, 0.0), (4, 1, 100.0)]
    md = (out / "summary.md").read_text()
    assert "| fine | 5 | 34.0 % | 100.0 % | +26.0 % | 3 of 5 |" in md
    assert "| 2 | +25.0 % / 25.0 % (2) |" in md
    assert (out / "plots" / "bias_by_workers.png").read_bytes()[:8] == PNG


def test_a_case_may_not_take_the_bias_plots_name(tmp_path):
    from sgdsim.errors import ConfigError

    path = tmp_path / "grid.toml"
    path.write_text(GRID.replace('name = "a"', 'name = "bias_by_workers"'), encoding="utf-8")
    with pytest.raises(ConfigError, match="may not be named bias_by_workers"):
        run_validation(load_grid(path), str(tmp_path / "out"), dry_run=True, log=lambda m: None)
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- plot

class Ax:
    """Records what is drawn."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *a, **k: self.calls.append((name, a, k))


def test_bias_plot_draws_a_zero_line_the_means_and_every_point():
    from sgdsim.validate.plot import _draw_bias

    ax = Ax()
    _draw_bias(ax, POINTS)
    assert ("axhline", (0.0,)) in [(n, a) for n, a, _ in ax.calls]
    plots = [(a, k) for n, a, k in ax.calls if n == "plot"]
    means = {k["label"]: (a[0], a[1]) for a, k in plots if "label" in k}
    assert means["fine (mean)"] == ([2, 4], [pytest.approx(2.5), pytest.approx(-10.0)])
    markers = [a for a, k in plots if "label" not in k]
    assert markers[0][:2] == ([2, 2, 4], [pytest.approx(10.0), pytest.approx(-5.0), pytest.approx(-10.0)])
    assert not any(n == "set_yscale" for n, _, _ in ax.calls)  # small errors: linear
    far = Ax()
    _draw_bias(far, POINTS + [("cynthia", 8, 10.0, 60.0)])  # +500 %
    assert ("set_yscale", ("symlog",)) in [(n, a) for n, a, _ in far.calls]


# ----------------------------------------------------------------------------- lab scripts

HEAD = "case,model,workers,measured,predicted,error_pct,measured_runs,interval_low,interval_high,fitted\n"


def _script(name: str):
    lab = str(ROOT / "examples" / "lab")
    spec = importlib.util.spec_from_file_location(name, f"{lab}/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, lab)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(lab)
    return mod


def test_validation_table_prints_the_bias_and_plots_it(tmp_path, capsys):
    pts = tmp_path / "points.csv"
    pts.write_text(HEAD + "c,fine,1,100,100,0,100,90,110,1\n"      # a fit: left out
                   "c,fine,2,100,110,10,100,100,120,\n"
                   "c,fine,4,50,45,-10,50,40,50,\n"
                   "c,coarse,2,200,210,5,200,,,\n"
                   "c,coarse,4,,99,,,,,\n", encoding="utf-8")      # unmeasured
    png = tmp_path / "bias.png"
    assert _script("validation_table").main([str(pts), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "| fine | 2 | 10.0 % / 10.0 % | +0.0 % | 1 of 2 |" in out
    assert "| coarse | 1 | 5.0 % / 5.0 % | +5.0 % | 1 of 1 |" in out
    assert "| 2 | +10.0 % / 10.0 % (1) | +5.0 % / 5.0 % (1) |" in out
    assert "| 4 | -10.0 % / 10.0 % (1) | - |" in out
    assert png.read_bytes()[:8] == PNG


def test_pooled_errors_gives_the_signed_mean(tmp_path, capsys):
    pts = tmp_path / "a.csv"
    pts.write_text(HEAD + "c,fine,2,10,11,10,10,9,12,\nd,fine,2,20,18,-10,20;20,17,19,\n"
                   "e,fine,2,20,16,-20,20,15,17,\n", encoding="utf-8")
    assert _script("pooled_errors").main(["--points", str(pts)]) == 0
    assert "signed mean -6.7 %, too high 1 of 3" in capsys.readouterr().out
