"""The HTML report: figure geometry read back from the SVG, escaping, offline-ness, refusal to
overwrite. The inputs block: test_report_inputs.py; table formats: test_report_tables.py; what
a browser draws: test_report_browser.py."""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from html import escape

import numpy as np
import pytest

from sgdsim.errors import ConfigError
from sgdsim.report import ReportInput, Series, render_html, write_html
from sgdsim.report import svg
from sgdsim.report.figures import efficiency
from sgdsim.report.html import PERFETTO
from sgdsim.spec.control import MEASURED


def point(w, thr, lo=None, hi=None, util=None, regimes=(), bottleneck="downlink", model="fine"):
    return {"workers": w, "throughput": float(thr),
            "ci_low": float(thr if lo is None else lo), "ci_high": float(thr if hi is None else hi),
            "step_time_s": 32 * w / thr if thr else 0.0, "ops_simulated": 10,
            "bottleneck": bottleneck, "utilization": dict(util or {"worker": 0.5}),
            "steps_measured": 5, "wall_s": 0.01, "model": model, "regime": "",
            "response_time_s": {}, "replications": 3, "regimes": [dict(r) for r in regimes]}


def report(*series, title="test report", **kw):
    kw.setdefault("profiles", ({"name": "toy", "path": "toy.json", "batch_size": 32},))
    kw.setdefault("inputs", (("bandwidth", "10 Gbps (default)"),))
    return ReportInput(title=title, series=tuple(series), **kw)


def fine_series(label="toy · fine", ws=(1, 2, 4, 8), base=100.0):
    pts = [point(w, base * w * 0.9 ** i, base * w * 0.9 ** i * 0.95, base * w * 0.9 ** i * 1.05,
                 util={"worker": 0.9 - 0.1 * i, "downlink": 0.2 * (i + 1), "uplink": 0.15 * (i + 1)})
           for i, w in enumerate(ws)]
    return Series(label, "toy", "fine", tuple(reversed(pts)))  # any order is allowed


def lin_series(label="toy · lin", ws=(1, 2, 4, 8), per_worker=80.0):
    return Series(label, "toy", "lin", tuple(point(w, per_worker * w, model="lin") for w in ws))


def figure(html: str, fig_id: str) -> ET.Element:
    m = re.search(rf'<svg id="{fig_id}".*?</svg>', html, re.S)
    assert m, f"no {fig_id} in the page"
    return ET.fromstring(m.group(0))  # also proves the inline SVG is well-formed


def coords(attr: str) -> list[tuple[float, float]]:
    return [tuple(map(float, pair.split(","))) for pair in attr.split()]


def by_series(root: ET.Element, tag: str | None, cls: str) -> dict[str, list[ET.Element]]:
    """``tag`` None: any element (markers are circles, squares, triangles, ...)."""
    out: dict[str, list[ET.Element]] = {}
    for el in root.iter(tag):
        if el.get("class") == cls:
            out.setdefault(el.get("data-series"), []).append(el)
    return out


def centre(el: ET.Element) -> tuple[float, float]:
    """A marker's centre: a circle's, or a polygon's vertex mean (regular shapes)."""
    if el.tag == "circle":
        return float(el.get("cx")), float(el.get("cy"))
    xy = coords(el.get("points"))
    return sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)


def plot_area(root: ET.Element, panel: int = 0) -> tuple[float, float, float, float]:
    (rect,) = [el for el in root.iter("rect") if el.get("class") == "plot-area"
               and el.get("data-panel") == str(panel)]
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))


def panel_titles(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter("text") if t.get("class") == "panel-title"]


# ----------------------------------------------------------------------------- structure

def test_each_series_is_one_polyline_with_one_marker_per_point():
    a, b = fine_series(ws=(1, 2, 4, 8, 12)), lin_series(ws=(2, 6, 12))
    root = figure(render_html(report(a, b)), "fig-throughput")
    assert root.get("role") == "img" and root.find("title").text
    lines = by_series(root, "polyline", "series")
    markers = by_series(root, None, "marker")
    assert {k: len(v) for k, v in lines.items()} == {"0": 1, "1": 1}
    assert {k: len(v) for k, v in markers.items()} == {"0": 5, "1": 3}
    # The curve runs left to right through its markers although the points came unsorted.
    for key in "01":
        xy = coords(lines[key][0].get("points"))
        assert [x for x, _ in xy] == sorted(x for x, _ in xy)
        assert np.allclose(xy, [centre(m) for m in markers[key]], atol=0.02)
    # Colour, dash and marker shape each tell the two apart.
    assert lines["0"][0].get("stroke") == svg.PALETTE[0]
    assert lines["1"][0].get("stroke") == svg.PALETTE[1]
    assert lines["0"][0].get("stroke-dasharray") != lines["1"][0].get("stroke-dasharray")
    assert markers["0"][0].tag != markers["1"][0].tag


def test_band_vertices_are_the_ci_values_mapped_through_the_axes():
    # ci_high tops out at exactly 1000, so the y axis is 0..1000 (ticks of 200).
    pts = (point(1, 300, 250, 350), point(2, 500, 400, 600), point(4, 900, 800, 1000))
    root = figure(render_html(report(Series("s", "toy", "fine", pts))), "fig-throughput")
    ticks = [t.text for t in root.iter("text") if t.get("class") == "ytick"]
    assert ticks == ["0", "200", "400", "600", "800", "1,000"]
    # The plot area as drawn: 1000 at its top edge, 0 at its bottom.
    left, top, width, height = plot_area(root)
    y = lambda v: top + height * (1 - v / 1000)  # noqa: E731
    # x: linear from 0 (W max/min < 16), inset by X_PAD on both sides.
    x = lambda w: left + svg.X_PAD + (width - 2 * svg.X_PAD) * w / 4  # noqa: E731
    (band,) = by_series(root, "polygon", "band")["0"]
    expected = [(x(1), y(350)), (x(2), y(600)), (x(4), y(1000)),
                (x(4), y(800)), (x(2), y(400)), (x(1), y(250))]
    got = coords(band.get("points"))
    assert np.allclose(got, expected, atol=0.006), got
    marker_w2 = by_series(root, None, "marker")["0"][1]
    assert centre(marker_w2)[1] == pytest.approx(y(500), abs=0.006)
    assert float(band.get("fill-opacity")) < 1  # translucent


def test_analytic_series_get_no_band_but_a_single_point_gets_a_whisker():
    html = render_html(report(lin_series(), Series("one", "toy", "fine", (point(3, 50, 40, 60),))))
    root = figure(html, "fig-throughput")
    bands = by_series(root, "polygon", "band")
    assert "0" not in bands  # ci == throughput: nothing to draw
    whisker = [el for el in root.iter("line") if el.get("class") == "band"]
    assert len(whisker) == 1 and whisker[0].get("data-series") == "1"


def test_linear_scaling_is_100_percent_everywhere_even_without_w1():
    assert efficiency(sorted(lin_series(ws=(2, 4, 8, 16)).points, key=lambda p: p["workers"])) \
        == [(2, 100.0), (4, 100.0), (8, 100.0), (16, 100.0)]
    root = figure(render_html(report(lin_series(ws=(2, 4, 8, 16)))), "fig-efficiency")
    (ref,) = [el for el in root.iter("line") if el.get("class") == "reference"]
    cys = {round(centre(m)[1], 2) for m in by_series(root, None, "marker")["0"]}
    assert cys == {float(ref.get("y1"))}
    # A sublinear series drops below 100 % (sanity check that the test can fail).
    eff = efficiency(fine_series().sorted_points())
    assert eff[0][1] == pytest.approx(100.0) and eff[-1][1] == pytest.approx(72.9)


def test_wide_worker_range_uses_a_log2_axis():
    root = figure(render_html(report(lin_series(ws=(1, 2, 4, 8, 16, 32)))), "fig-throughput")
    xs = [centre(m)[0] for m in by_series(root, None, "marker")["0"]]
    gaps = np.diff(xs)
    assert gaps == pytest.approx([gaps[0]] * len(gaps), abs=0.02)
    assert any("log₂" in (t.text or "") for t in root.iter("text"))


def test_utilization_has_one_panel_per_resource_of_the_fine_series():
    fine = fine_series()
    root = figure(render_html(report(lin_series(), fine)), "fig-utilization")
    # Downlink and uplink apart: one can no longer hide under the other.
    assert panel_titles(root) == list(fine.points[0]["utilization"])
    lines = root.findall("polyline")
    assert [ln.get("data-panel") for ln in lines] == ["0", "1", "2"]
    assert {ln.find("title").text for ln in lines} == {fine.label}
    ys = [t.text for t in root.iter("text") if t.get("class") == "ytick"]
    assert ys[0] == "0" and ys[-1] == "100"


def test_the_bottleneck_the_table_names_is_ringed_in_its_resource_panel():
    from sgdsim.point import SATURATED

    fine = fine_series()
    html = render_html(report(lin_series(), fine))
    root = figure(html, "fig-utilization")
    titles = panel_titles(root)
    rings = {(titles[int(r.get("data-panel"))], round(float(r.get("cx")), 2))
             for r in root.iter("circle") if r.get("class") == "ring"}
    saturated = [p for p in fine.points if p["utilization"][p["bottleneck"]] >= SATURATED]
    assert saturated, "the oracle needs a saturated point"
    line = {ln.get("data-panel"): coords(ln.get("points")) for ln in root.findall("polyline")}
    ws = sorted(p["workers"] for p in fine.points)
    expected = {(p["bottleneck"], round(line[str(titles.index(p["bottleneck"]))]
                                        [ws.index(p["workers"])][0], 2)) for p in saturated}
    assert rings == expected
    for p in saturated:  # ... and the table names the same
        assert re.search(rf"<td class=\"num\">{p['workers']}</td>.*?<td>{p['bottleneck']}</td>", html)


def test_nice_ticks_use_1_2_5_steps_from_zero():
    assert svg.nice_ticks(1000) == [0, 200, 400, 600, 800, 1000]
    assert svg.nice_ticks(7.3) == [0, 2, 4, 6, 8]
    assert svg.nice_ticks(0.0) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert svg.nice_ticks(2.6e4) == [0, 5000, 10000, 15000, 20000, 25000, 30000]
    assert svg.nice_ticks(110) == [0, 20, 40, 60, 80, 100, 120]


def test_points_table_and_summary():
    regimes = ({"throughput": 610.0, "share": 0.6}, {"throughput": 560.0, "share": 0.4})
    s = Series("toy · fine", "toy", "fine",
               (point(1, 100, 95, 105, util={"downlink": 0.93}), point(8, 590, 550, 620,
                                                                   util={"downlink": 1.0},
                                                                   regimes=regimes)))
    html = render_html(report(s))
    assert "best 590 examples/s at W=8" in html
    assert "<td>downlink</td><td class=\"num\">93</td>" in html
    assert "<td>610 (60 %) / 560 (40 %)</td>" in html
    assert html.count("610 (60 %)") == 1
    assert "95 – 105" in html
    assert "model's own error" not in html  # points without a margin say nothing of one


def test_the_inputs_come_first_and_no_column_stays_empty():
    rows = (("bandwidth (each node's NIC)", "10 Gbps (default)"), ("mode", "sync"))
    html = render_html(report(fine_series(), inputs=rows))
    block = html[html.index('<h2 id="inputs">'):html.index("<figure>")]  # before every figure
    for name, value in rows:
        assert f"<td>{escape(name)}</td><td>{escape(value)}</td>" in block
    assert "regimes" not in html  # no point ran in two regimes
    regimes = ({"throughput": 610.0, "share": 0.6}, {"throughput": 560.0, "share": 0.4})
    two = Series("toy · fine", "toy", "fine", (point(8, 590, 550, 620, regimes=regimes),))
    assert "<th>two regimes (examples/s, share)</th>" in render_html(report(two))


def test_points_table_says_which_model_error_the_intervals_hold():
    pts = tuple({**point(w, 100 * w, 85 * w, 115 * w), "model_error_rel": 0.1042, "margin_source": MEASURED}
                for w in (1, 2))
    html = render_html(report(Series("toy · fine", "toy", "fine", pts)))
    assert "the model's own error (±10.4 %, measured on lab runs) included" in html


# ----------------------------------------------------------------------------- safety

EVIL = "<script>alert(1)</script>"


def test_user_text_is_escaped_everywhere():
    s = Series(EVIL, EVIL, "fine", (point(1, 10, 9, 11, util={EVIL: 0.5}, bottleneck=EVIL),))
    html = render_html(report(s, title=EVIL, profiles=({"name": EVIL, EVIL: 1},),
                              inputs=((EVIL, EVIL),), hardware={"x": EVIL},
                              timeline='"><img src=x onerror=alert(1)>', generated_by=EVIL))
    assert EVIL not in html
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html  # the timeline path stayed inside its attribute
    for fig in ("fig-throughput", "fig-efficiency", "fig-utilization"):
        figure(html, fig)  # still well-formed


@pytest.mark.parametrize("series", [
    (Series("one point", "toy", "fine", (point(4, 120, 100, 140),)),),
    (Series("zero", "toy", "fine", (point(1, 0), point(2, 0))),),
    (Series("no W=1", "toy", "coarse", (point(3, 30), point(6, 50), point(12, 60))),
     Series("zero at W0", "toy", "fine", (point(2, 0), point(4, 10, 8, 12)))),
])
def test_edge_cases_render_without_nan(series):
    html = render_html(report(*series))
    assert not re.search(r"\b(nan|inf|infinity)\b", html, re.I)
    for fig in ("fig-throughput", "fig-efficiency", "fig-utilization"):
        root = figure(html, fig)
        for el in root.iter():
            for v in el.attrib.values():
                assert "nan" not in v.lower() and "inf" not in v.lower()


@pytest.mark.parametrize("make, message", [
    (lambda: Series("s", "toy", "fine", (point(1, 10) | {"throughput": math.nan},)), "throughput"),
    (lambda: Series("s", "toy", "fine", (point(1, 10) | {"ci_high": math.inf},)), "ci_high"),
    (lambda: Series("s", "toy", "fine", (point(1, 10, util={"up": math.nan}),)), "utilization"),
    (lambda: Series("s", "toy", "fine", (point(1, 10) | {"workers": 0},)), "workers"),
    (lambda: Series("s", "toy", "fine", ()), "no points"),
    (lambda: report(), "no series"),
])
def test_invalid_input_is_one_config_error_line(make, message):
    with pytest.raises(ConfigError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_mutated_points_are_checked_again_at_render_time():
    r = report(lin_series())
    r.series[0].points[0]["throughput"] = math.nan
    with pytest.raises(ConfigError, match="throughput"):
        render_html(r)


def test_nothing_remote_is_loaded():
    html = render_html(report(fine_series(), lin_series(), hardware={"url": "https://x.org"},
                              timeline="trace.json"))
    assert not re.search(r"\bsrc\s*=", html, re.I)
    assert not re.search(r"<(script|link|iframe|object|embed|img)\b", html, re.I)
    assert not re.search(r"url\(|@import", html, re.I)
    assert "xmlns" not in html and "xlink" not in html
    hrefs = re.findall(r'<(\w+)[^>]*\bhref="([^"]*)"', html)
    assert hrefs == [("a", "trace.json"), ("a", PERFETTO)]
    assert "open it in" in html and "(load the file)" in html
    assert "Content-Security-Policy" in html


def test_hardware_and_timeline_sections():
    nominal = render_html(report(lin_series()))
    assert "nominal (no hardware file)" in nominal and "Timeline" not in nominal
    html = render_html(report(lin_series(), hardware={"bandwidth_bps": 1e10}))
    assert "<pre>" in html and "&quot;bandwidth_bps&quot;: 10000000000.0" in html


def test_write_html_refuses_to_overwrite_and_checks_before_rendering(tmp_path):
    path = tmp_path / "report.html"
    path.write_text("keep me")
    r = report(lin_series())
    with pytest.raises(ConfigError, match="refusing to overwrite"):
        write_html(r, str(path))
    assert path.read_text() == "keep me"
    # Even an invalid report reports the existing file first: the check runs before rendering.
    r.series[0].points[0]["throughput"] = math.nan
    with pytest.raises(ConfigError, match="refusing to overwrite"):
        write_html(r, str(path))
    with pytest.raises(ConfigError, match="throughput"):
        write_html(r, str(path), force=True)
    assert path.read_text() == "keep me"  # a failed render writes nothing
    r.series[0].points[0]["throughput"] = 80.0
    write_html(r, str(path), force=True)
    assert path.read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(ConfigError, match="does not exist"):
        write_html(r, str(tmp_path / "missing" / "r.html"))
