"""The lab's analysis scripts that decide issue 8's figures: pooled errors and the margin fit,
on hand-made points.csv files whose answers are computed by hand."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAD = "case,model,workers,measured,predicted,error_pct,measured_runs,interval_low,interval_high,fitted\n"


def _script(name: str):
    lab = str(ROOT / "examples" / "lab")  # the scripts import each other, as when run from there
    spec = importlib.util.spec_from_file_location(name, f"{lab}/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, lab)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(lab)
    return mod


def _csv(path: Path, rows: list[str]) -> str:
    path.write_text(HEAD + "".join(r + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_pooled_error_takes_every_run_against_its_own_measurements_prediction(tmp_path, capsys):
    a = _csv(tmp_path / "a.csv", ["c,fine,1,10,10,0,10;10,9,11,1",      # a fit: left out
                                  "c,fine,2,10,10,0,11;9,9,11,",
                                  "d,fine,2,20,25,25,20,24,26,",
                                  "c,coarse,2,10,12,20,11;9,,,"])    # not the fine model
    b = _csv(tmp_path / "b.csv", ["c,fine,2,22,20,-9.1,22,19,21,"])
    assert _script("pooled_errors").main(["--points", a, "--again", b]) == 0
    out = capsys.readouterr().out
    # c: ratios 1.1, 0.9 (first) and 1.1 (second): 1 / (3.1 / 3) - 1 = -3.2 %; d: +25 %
    assert "| c W=2 | +0.0 % (2), -9.1 % (1) | -3.2 % (3) |" in out
    assert "2 points, pooled: fine mean 14.1 %, max 25.0 % (d W=2, +25.0 %)" in out


def test_pooled_errors_refuse_a_measurement_of_no_known_point(tmp_path, capsys):
    a = _csv(tmp_path / "a.csv", ["c,fine,2,10,10,0,11;9,9,11,"])
    b = _csv(tmp_path / "b.csv", ["e,fine,2,22,20,-9.1,22,19,21,"])
    mod = _script("pooled_errors")
    assert mod.main(["--points", a, "--again", b]) == 2
    assert mod.main(["--points", str(tmp_path / "none.csv")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_fit_margin_applies_the_rule_to_held_out_runs(tmp_path, capsys):
    # 19 runs on a point predicted 100 with interval [90, 110]: the runs at 100 + k need
    # margins sqrt((k/100)^2 - 0.1^2) beyond k = 10; the largest (k = 28) is the margin
    runs = ";".join(str(100 + k) for k in [0] * 10 + list(range(20, 29)))
    fit = _csv(tmp_path / "fit.csv", [f"c,fine,2,100,100,0,{runs},90,110,"])
    inside = _csv(tmp_path / "in.csv", [f"c,fine,2,100,100,0,{';'.join(['125'] * 9 + ['140'])},90,110,"])
    out_ = _csv(tmp_path / "out.csv", [f"c,fine,2,100,100,0,{';'.join(['125'] * 8 + ['140'] * 2)},90,110,"])
    mod = _script("fit_margin")
    assert mod.main(["--fit", fit, "--check", inside]) == 0
    text = capsys.readouterr().out
    assert f"margin m = {100 * (0.28 ** 2 - 0.01) ** 0.5:.2f} %" in text
    assert "met (90.0 %)" in text
    assert mod.main(["--fit", fit, "--check", out_]) == 0
    assert "NOT met (80.0 %)" in capsys.readouterr().out
    assert mod.main(["--fit", _csv(tmp_path / "few.csv", ["c,fine,2,100,100,0,101;102,90,110,"])]) == 2


@pytest.mark.parametrize("name", ["pooled_errors", "fit_margin"])
def test_scripts_name_a_file_that_is_not_points(tmp_path, capsys, name):
    bad = tmp_path / "README.md"
    bad.write_text("# not a points file\n", encoding="utf-8")
    flag = "--points" if name == "pooled_errors" else "--fit"
    assert _script(name).main([flag, str(bad)]) == 2
    assert "cannot read the points" in capsys.readouterr().err
