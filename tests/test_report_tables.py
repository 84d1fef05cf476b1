"""The report's tables: no column without a value in any row, and in every numeric column one
number format (the same decimals, thousands always separated, no unit in a cell: units stand in
the headers).

Checked on a report of hand-made series spanning four orders of magnitude, and on a real
``sgdsim report`` of two profiles by every model with a validation section.
"""
from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from sgdsim.cli import main
from sgdsim.report import ReportInput, Series, render_html
from sgdsim.report.tables import EMPTY, decimals

ROOT = Path(__file__).resolve().parent.parent
PROFILES = [str(ROOT / "examples" / "profiles" / f"{name}.json") for name in ("alexnet-nooverlap", "vgg16")]
NUMBER = r"[+-]?\d{1,3}(?:,\d{3})*(?:\.\d+)?"
CELL = re.compile(rf"^{NUMBER}(?: – {NUMBER})?$")


def tables(html: str) -> list[tuple[list[str], list[list[tuple[bool, str]]]]]:
    """Each table: its headers, and its rows of (numeric?, text) cells."""
    out = []
    for body in re.findall(r"<table>(.*?)</table>", html, re.S):
        head = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
        rows = [[(cls is not None and "num" in cls, unescape(text))
                 for cls, text in re.findall(r'<td(?: class="([^"]*)")?>(.*?)</td>', tr)]
                for tr in re.findall(r"<tr>(.*?)</tr>", body) if "<td" in tr]
        out.append((head, rows))
    return out


def check_tables(html: str) -> int:
    found = tables(html)
    for head, rows in found:
        assert rows and all(len(r) == len(head) for r in rows), head
        for i, name in enumerate(head):
            cells = [r[i] for r in rows]
            assert any(text not in EMPTY for _, text in cells), f"empty column {name!r}"
            if cells[0][0]:
                _check_numbers(name, [text for _, text in cells if text not in EMPTY])
    return len(found)


def _check_numbers(name: str, cells: list[str]) -> None:
    for text in cells:
        assert CELL.match(text), f"{name!r}: {text!r} is not a bare number (units go in the header)"
    places = {len(n.partition(".")[2]) for text in cells for n in re.findall(NUMBER, text)}
    assert len(places) == 1, f"{name!r}: decimals {sorted(places)} in one column: {cells}"


def _point(w, thr, model, spread):
    return {"workers": w, "throughput": thr, "ci_low": thr * (1 - spread), "ci_high": thr * (1 + spread),
            "step_time_s": 64 * w / thr, "bottleneck": "uplink", "utilization": {"uplink": 0.5 + 0.03 * w},
            "model": model}


def test_hand_made_series_of_every_magnitude():
    ws = (1, 2, 4, 8, 16)
    series = [Series(f"{name} · {model}", name, model, tuple(_point(w, base * w, model, spread) for w in ws))
              for name, base in (("tiny", 0.37), ("huge", 2345.6))
              for model, spread in (("fine", 0.1), ("lin", 0.0))]
    html = render_html(ReportInput("t", series, ({"name": "tiny", "batch_size": 8, "compute_ms": 1.5},
                                                 {"name": "huge", "batch_size": 512, "compute_ms": 1234.5}),
                                   inputs=(("bandwidth", "10 Gbps (default)"),)))
    assert check_tables(html) == 3  # inputs, predictions, profiles
    assert "two regimes" not in html  # no point ran in two regimes: no column


def test_a_column_with_no_value_anywhere_is_dropped():
    lin = Series("toy · lin", "toy", "lin", tuple(_point(w, 10.0 * w, "lin", 0.0) for w in (1, 2)))
    html = render_html(ReportInput("t", (lin,), ({"name": "toy", "ops": None},)))
    heads = [h for head, _ in tables(html) for h in head]
    assert not any("interval" in h for h in heads)  # an analytic model has none
    assert "ops" not in heads
    check_tables(html)


@pytest.mark.parametrize("values", [[82.16, 1566.3, 288.6], [0.5, 12.0], [1500.0, 2.0e6], [3, 4]])
def test_decimals_keep_three_significant_digits_of_the_smallest(values):
    d = decimals(values)
    small = min(v for v in values if v)
    assert abs(round(small, d) - small) <= 0.005 * small  # within half a percent
    assert d == 0 or small < 10 ** (3 - d)  # and no decimal more than that takes


def test_a_real_report_with_validation(tmp_path):
    points = tmp_path / "points.csv"
    points.write_text("case,model,workers,measured,predicted\n"
                      "a,fine,1,100,104.5\na,fine,2,190,201\na,coarse,1,100,93.25\na,coarse,2,190,2051\n")
    out = tmp_path / "r.html"
    assert main(["report", *PROFILES, "--workers", "1,2,4", "--model", "all", "--steps", "2",
                 "--warmup", "1", "--replications", "2", "--validation", str(points), "--quiet",
                 "-o", str(out)]) == 0
    assert check_tables(out.read_text()) == 4  # inputs, predictions, validation, profiles
