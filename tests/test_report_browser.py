"""What a browser draws of the HTML report: headless Chromium screenshots, of the whole page and
of each chart alone, checked pixel by pixel.

Each chart is cut out of the page into a page of its own and shot with a window of the SVG's
size, so a pixel is an SVG unit and each panel's plot area is read from the SVG itself. In
every panel, each curve drawn there must show its own colour: a curve hidden under another
(eight in one plot, or a downlink under its uplink) fails. The report draws eight series, two
of them (lin and cynthia of one profile) equal at every point, the worst case for hiding.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from copy import deepcopy as copy_tree

import numpy as np
import pytest

from sgdsim.report import ReportInput, Series, svg, write_html

MIN_PIXELS = 100  # of a curve's stroke in a panel, drawn alone
SHOWN = 0.7  # of those it must still show among the others (equal curves drawn over each
#               other: 0.3; crossings and nested markers cost a curve about a tenth)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium not installed (Debian package chromium)")


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])


def _near(img: np.ndarray, rgb, tol: int = 8) -> np.ndarray:
    return (np.abs(img.astype(int) - np.asarray(rgb)) <= tol).all(axis=-1)


def _shoot(page, png, tmp_path, width: int, height: int) -> np.ndarray:
    Image = pytest.importorskip("PIL.Image")
    cmd = [_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", f"--window-size={width},{height}",
           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert png.exists(), f"no screenshot (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return np.asarray(Image.open(png).convert("RGB"))


def _point(w, thr, util=None, model="fine", spread=0.1):
    return {"workers": w, "throughput": float(thr), "ci_low": thr * (1 - spread),
            "ci_high": thr * (1 + spread), "step_time_s": 32 * w / thr, "bottleneck": "uplink",
            "utilization": util or {}, "model": model}


def eight_series() -> tuple[Series, ...]:
    """Two profiles × four models; lin and cynthia of the first are equal everywhere, and its
    fine series has downlink and uplink equal too (the case a user reported)."""
    ws, out = (1, 2, 4, 8, 16), []
    for profile, base in (("big", 300.0), ("small", 150.0)):
        curves = {"fine": [base * w ** 0.8 for w in ws], "coarse": [base * w ** 0.75 for w in ws],
                  "lin": [0.8 * base * w ** 0.7 for w in ws]}
        curves["cynthia"] = curves["lin"] if profile == "big" else [0.7 * base * w ** 0.6 for w in ws]
        for model, ys in curves.items():
            pts = []
            for i, (w, y) in enumerate(zip(ws, ys)):
                net = min(1.0, 0.2 * (i + 1) * (1.2 if profile == "small" else 1.0))
                util = {"worker": 1.0 - 0.15 * i, "downlink": net, "uplink": net}
                pts.append(_point(w, y, util, model, 0.1 if model in ("fine", "coarse") else 0.0))
            out.append(Series(f"{profile} · {model}", profile, model, tuple(pts)))
    return tuple(out)


def _page(tmp_path):
    page = tmp_path / "report.html"
    write_html(ReportInput("eight series", eight_series(), ({"name": "big"}, {"name": "small"}),
                           inputs=(("bandwidth", "10 Gbps (default)"),), timeline="trace.json"),
               str(page))
    return page, page.read_text()


def test_chromium_draws_the_whole_page(tmp_path):
    page, html = _page(tmp_path)
    img = _shoot(page, tmp_path / "page.png", tmp_path, 1200, 3200)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 200, "the page looks blank"
    panels = len(re.findall(r'class="plot-area"', html))
    tint = int(_near(img, _rgb(svg.PLOT_BG), tol=1).sum())
    # Every panel's tinted plot area is on screen: at least half of its area shows the tint.
    areas = [float(w) * float(h) for w, h in
             re.findall(r'class="plot-area"[^>]*width="([\d.]+)" height="([\d.]+)"', html)]
    assert panels == len(areas) and tint > 0.5 * sum(areas), (tint, sum(areas))


def _ink(img: np.ndarray, colour: str) -> np.ndarray:
    """Pixels at least half covered by a stroke of ``colour`` over the plot tint: on the line
    from the tint to the colour, past its middle (antialiased edges count, other colours not)."""
    c, bg = _rgb(colour).astype(float), _rgb(svg.PLOT_BG).astype(float)
    v = img.astype(float) - bg
    a = v @ (c - bg) / ((c - bg) @ (c - bg))
    off_line = np.linalg.norm(v - a[..., None] * (c - bg), axis=-1)
    return (a >= 0.5) & (off_line < 25)


def _centre(el: ET.Element) -> tuple[float, float]:
    if el.tag == "circle":
        return float(el.get("cx")), float(el.get("cy"))
    xy = [tuple(map(float, p.split(","))) for p in el.get("points").split()]
    return sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)


def _alone(root: ET.Element, key: str) -> str:
    """The chart with every other curve's strokes and markers taken out (bands kept)."""
    copy = copy_tree(root)
    for parent in copy.iter():
        for child in list(parent):
            if child.get("class") in ("series", "marker", "ring") and child.get("data-series") != key:
                parent.remove(child)
    return ET.tostring(copy, encoding="unicode")


@pytest.mark.parametrize("fig_id", ["fig-throughput", "fig-efficiency", "fig-utilization"])
def test_every_curve_shows_in_every_panel(tmp_path, fig_id):
    """One shot of the chart, then of each curve alone below it: in every panel each curve's
    stroke (away from the markers, which nest by design) shows at least SHOWN of what it
    shows alone. Eight curves on one plot, or equal curves drawn over each other, fail."""
    _, html = _page(tmp_path)
    chart = re.search(rf'<svg id="{fig_id}".*?</svg>', html, re.S).group(0)
    root = ET.fromstring(chart)
    width, height = (int(float(root.get(k))) + 1 for k in ("width", "height"))
    keys = sorted({el.get("data-series") for el in root.iter("polyline")})
    copies = [chart] + [_alone(root, k) for k in keys]
    alone = tmp_path / f"{fig_id}.html"
    alone.write_text('<!DOCTYPE html><html><body style="margin:0">' + "".join(
        f'<div style="height:{height}px">{svg_text}</div>' for svg_text in copies) + "</body></html>")
    img = _shoot(alone, tmp_path / f"{fig_id}.png", tmp_path, width, height * len(copies))
    shots = [img[i * height:(i + 1) * height] for i in range(len(copies))]
    assert len(np.unique(shots[0].reshape(-1, 3), axis=0)) > 50, f"{fig_id} looks blank"
    yy, xx = np.mgrid[0:height, 0:width]
    away = np.ones((height, width), bool)
    for m in (el for el in root.iter() if el.get("class") in ("marker", "ring")):
        cx, cy = _centre(m)
        away &= (xx - cx) ** 2 + (yy - cy) ** 2 > 12 ** 2
    rects = [el for el in root.iter("rect") if el.get("class") == "plot-area"]
    for rect in rects:
        x, y, w, h = (round(float(rect.get(k))) for k in ("x", "y", "width", "height"))
        inside = np.zeros_like(away)
        inside[y:y + h, x:x + w] = True
        curves = [ln for ln in root.iter("polyline") if ln.get("data-panel") == rect.get("data-panel")]
        assert curves, f"{fig_id}: panel {rect.get('data-panel')} has no curve"
        for ln in curves:
            mask = inside & away
            seen = int((_ink(shots[0], ln.get("stroke")) & mask).sum())
            alone_seen = int((_ink(shots[1 + keys.index(ln.get("data-series"))], ln.get("stroke"))
                              & mask).sum())
            assert alone_seen > MIN_PIXELS and seen >= SHOWN * alone_seen, (
                f"{fig_id}, panel {rect.get('data-panel')}: {ln.find('title').text} shows "
                f"{seen} of its {alone_seen} pixels")
    if fig_id == "fig-throughput":  # the interval bands: the blue at BAND_OPACITY over the tint
        blue = _rgb(svg.PALETTE[0])
        band = np.round(svg.BAND_OPACITY * blue + (1 - svg.BAND_OPACITY) * _rgb(svg.PLOT_BG))
        assert int(_near(shots[0], band, tol=4).sum()) > 500
