"""The HTML report's validation section (``sgdsim report --validation POINTS.csv``).

Oracle: a hand-made points.csv whose errors are known: fine +10 % and −10 % at W = 2 (mean 0),
+20 % at W = 4; coarse −5 % at W = 2; a fitted row (+50 %) and an unmeasured one left out.
"""
import re

import pytest

from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.report.validation import read_points, section

CSV = """case,model,workers,measured,predicted,error_pct,measured_runs,interval_low,interval_high,fitted
a,fine,1,10,15,50,10,,,1
a,fine,2,10,11,10,10,,,
b,fine,2,20,18,-10,20,,,
a,fine,4,10,12,20,10,,,
a,coarse,2,10,9.5,-5,10,,,
a,coarse,4,,12,,,,,
"""


@pytest.fixture
def points_csv(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text(CSV)
    return str(path)


def test_checks_are_read_and_fits_and_unmeasured_points_left_out(points_csv):
    assert read_points(points_csv) == (("fine", 2, 10.0, 11.0), ("fine", 2, 20.0, 18.0),
                                       ("fine", 4, 10.0, 12.0), ("coarse", 2, 10.0, 9.5))


def test_the_section_gives_each_model_s_signed_and_absolute_error_by_w(points_csv):
    html = section(read_points(points_csv), "mine.csv")
    # fine over all: (10 − 10 + 20)/3 = +6.7 % signed, (10 + 10 + 20)/3 = 13.3 % mean |error|
    assert "fine: signed mean +6.7 %, mean |error| 13.3 %, 2 of 3 too high" in html
    assert "coarse: signed mean -5.0 %, mean |error| 5.0 %, 0 of 1 too high" in html
    # fine at W = 2, 4: signed, mean |error| (%) and runs, one kind of number per column
    head = re.findall(r"<th>(.*?)</th>", html)
    assert head[:4] == ["workers", "fine: signed error (%)", "fine: mean |error| (%)", "fine: runs"]
    cells = lambda w: re.findall(r'<td class="num">(.*?)</td>', re.search(  # noqa: E731
        rf'<tr><td class="num">{w}</td>.*?</tr>', html).group(0))
    assert cells(2)[:4] == ["2", "+0.0", "10.0", "2"] and cells(4)[:4] == ["4", "+20.0", "20.0", "1"]
    assert 'id="fig-validation"' in html and "Measured runs from mine.csv" in html
    assert len(re.findall(r"<tr>", html)) == 3  # a header and W = 2, 4


@pytest.mark.parametrize("text, message", [
    ("a,b\n1,2\n", "not a points.csv"),
    ("case,model,workers,measured,predicted\na,fine,x,1,2\n", "must be numbers"),
    ("case,model,workers,measured,predicted\na,fine,2,,2\n", "no measured point"),
])
def test_a_bad_file_is_one_line(tmp_path, text, message):
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_points(str(path))


def test_cli_report_has_the_section_and_refuses_a_bad_file_before_predicting(points_csv, tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "examples/profiles/alexnet-nooverlap.json", "--workers", "1,2", "--steps", "2",
            "--warmup", "1", "-o", str(out)]
    assert main(argv + ["--validation", points_csv]) == 0
    assert "<h2>Validation</h2>" in out.read_text()
    assert main(argv + ["--force", "--validation", str(tmp_path / "missing.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
