"""Inline-SVG line charts, written as text so that a report needs no plotting library and no
JavaScript: the page draws in any browser, offline.

A figure is a grid of small panels sharing one x axis and one legend (``small_multiples``):
eight curves on one plot crowd and hide each other, a few per panel do not. Within a panel each
curve differs by colour, dash pattern and marker shape; curves that coincide are drawn a few
pixels apart (``dodge``) and their markers nest, so none hides another.

The output is also well-formed XML (no ``xmlns``: an HTML parser puts inline ``<svg>`` in the
SVG namespace by itself, and leaving out the URL keeps the page free of anything that looks
like a remote resource), which lets tests parse a figure with ElementTree. Coordinates are
absolute (no transforms), so a test can map a value to its pixel from the plot-area rectangle.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Okabe-Ito's hues without its yellow (too faint on white), darkened where a thin line would be
# faint, then black, gold and grey: every colour has at least 3:1 contrast with the plot tint.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#AA3377", "#000000", "#8C6D00", "#6A3D9A", "#5F6B6D")
DASHES = ("", "7 4", "2 3", "9 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down", "triangle-left",
           "triangle-right", "pentagon")
# A tint used nowhere else: it marks the plot areas, which the browser test locates by it.
PLOT_BG = "#f6f7fb"
BAND_OPACITY = 0.18
RING = "the table's bottleneck"

FIG_W, SINGLE_W = 1040, 640
LEFT, RIGHT, TITLE_H, AXIS_H = 64, 16, 34, 44
PLOT_H = 190
LEGEND_W, LEGEND_ROW = 208, 20
# Markers at the first and last worker counts would sit on the frame otherwise.
X_PAD = 12
MIN_LABEL_GAP = 26  # px between x tick labels, so 1..64 on a log axis stays readable
MARKER_R = 4.5


@dataclass(frozen=True)
class Style:
    color: str
    dash: str
    marker: str


def style(i: int) -> Style:
    """Colour, dash and marker all change with ``i``: no two of the first eight curves look
    alike even in grey, and past eight the dash and marker still tell them apart."""
    return Style(PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)])


@dataclass(frozen=True)
class Line:
    label: str
    style: Style
    xy: tuple[tuple[float, float], ...]                       # sorted by x
    band: tuple[tuple[float, float, float], ...] | None = None  # (x, low, high)
    rings: frozenset = frozenset()                            # x values to circle
    key: int = 0  # the legend entry: the same curve in every panel has the same key


@dataclass(frozen=True)
class Panel:
    title: str
    lines: tuple[Line, ...]
    y_top: float  # the largest value its y axis must show (ticks are rounded up from it)


@dataclass(frozen=True)
class Scale:
    d0: float
    d1: float
    p0: float
    p1: float
    log2: bool = False

    def __call__(self, v: float) -> float:
        a, b, v = (math.log2(self.d0), math.log2(self.d1), math.log2(v)) if self.log2 \
            else (self.d0, self.d1, v)
        if b == a:  # one worker count only: put it in the middle
            return (self.p0 + self.p1) / 2
        return self.p0 + (v - a) / (b - a) * (self.p1 - self.p0)


def nice_ticks(top: float, target: int = 5) -> list[float]:
    """0, s, 2s, ... up to the first multiple of s >= top, with s in 1-2-5 × 10^k chosen so the
    number of intervals is the closest to ``target`` (ties: fewer)."""
    top = top if top > 0 else 1.0  # an all-zero curve still needs a visible axis
    mag = 10 ** math.floor(math.log10(top / target))
    steps = [m * mag * f for f in (0.1, 1, 10) for m in (1, 2, 5)]
    count = {s: math.ceil(top / s - 1e-9) for s in steps}
    step = min(steps, key=lambda s: (abs(count[s] - target), count[s]))
    return [i * step for i in range(count[step] + 1)]


def fmt_tick(v: float, step: float) -> str:
    if step >= 1:
        return f"{v:,.0f}"
    return f"{v:.{max(0, -math.floor(math.log10(step)))}f}"


def c(v: float) -> str:
    """Coordinates with two decimals: sub-pixel exact, and short enough to keep pages small."""
    return f"{v:.2f}"


def x_scale(xs: list[float], p0: float, p1: float) -> Scale:
    lo, hi = min(xs), max(xs)
    # A wide range of worker counts (1..64) crowds the small counts on a linear axis.
    if hi / lo >= 16:
        return Scale(lo, hi, p0 + X_PAD, p1 - X_PAD, log2=True)
    return Scale(0, hi, p0 + X_PAD, p1 - X_PAD)


@dataclass(frozen=True)
class Box:
    """One panel's plot area, in the figure's pixels."""

    x: float
    y: float
    w: float
    h: float


def layout(n: int) -> tuple[int, float]:
    """(columns, cell width): one wide panel, two side by side up to four, then three."""
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    return cols, (SINGLE_W if n == 1 else FIG_W / cols)


def small_multiples(fig_id: str, title: str, x_label: str, y_label: str, panels: list[Panel],
                    ref_y: float | None = None) -> str:
    """A complete ``<svg>``: the legend across the top, then one panel per ``panels`` entry,
    each with its frame, axes, optional dashed reference line, bands, curves and markers."""
    cols, cell_w = layout(len(panels))
    width = cols * cell_w
    legend, rows = _legend(_legend_entries(panels), width)
    top = LEGEND_ROW * len(rows) + 8
    cell_h = TITLE_H + PLOT_H + AXIS_H
    height = top + cell_h * math.ceil(len(panels) / cols)
    xs = sorted({x for p in panels for ln in p.lines for x, _ in ln.xy}) or [1]
    parts = [f'<svg id="{fig_id}" role="img" aria-labelledby="{fig_id}-title" width="{c(width)}" '
             f'height="{c(height)}" viewBox="0 0 {c(width)} {c(height)}" font-size="12" '
             f'font-family="sans-serif">', f'<title id="{fig_id}-title">{escape(title)}</title>']
    for k, panel in enumerate(panels):
        x0, y0 = (k % cols) * cell_w, top + (k // cols) * cell_h
        box = Box(x0 + LEFT, y0 + TITLE_H, cell_w - LEFT - RIGHT, PLOT_H)
        parts += _panel(k, panel, box, xs, x_label, y_label, ref_y)
    parts += legend
    parts.append("</svg>")
    return "\n".join(parts)


def _panel(k: int, panel: Panel, box: Box, xs: list[float], x_label: str, y_label: str,
           ref_y: float | None) -> list[str]:
    ticks = nice_ticks(panel.y_top)
    xsc = x_scale(xs, box.x, box.x + box.w)
    ysc = Scale(0, ticks[-1], box.y + box.h, box.y)
    out = [f'<text class="panel-title" x="{c(box.x + box.w / 2)}" y="{c(box.y - 15)}" '
           f'text-anchor="middle" font-weight="600" font-size="13">{escape(panel.title)}</text>',
           f'<rect class="plot-area" data-panel="{k}" x="{c(box.x)}" y="{c(box.y)}" '
           f'width="{c(box.w)}" height="{c(box.h)}" fill="{PLOT_BG}" stroke="#999"/>']
    out += _y_axis(ysc, ticks, y_label, box)
    out += _x_axis(xsc, xs, x_label, box)
    if ref_y is not None:
        y = c(ysc(ref_y))
        out.append(f'<line class="reference" data-panel="{k}" x1="{c(box.x)}" '
                   f'x2="{c(box.x + box.w)}" y1="{y}" y2="{y}" stroke="#555" stroke-dasharray="4 4"/>')
    out += [_band(ln, k, xsc, ysc) for ln in panel.lines if ln.band]
    # Solid curves first: a dashed one drawn over a coinciding solid one leaves it visible in
    # its gaps, the other way round it would vanish.
    order = sorted(panel.lines, key=lambda ln: bool(ln.style.dash))
    placed = dodge([[(xsc(x), ysc(y)) for x, y in ln.xy] for ln in order], box)
    out += [_curve(ln, k, pts) for ln, pts in zip(order, placed)]
    # Each curve's markers a size smaller than the previous curve's: markers that coincide
    # nest, every one showing a rim around the next.
    for j, ln in enumerate(panel.lines):
        out += _markers(ln, k, xsc, ysc, max(0.7, 1.45 - 0.2 * j))
    return out


def _y_axis(ys: Scale, ticks: list[float], label: str, box: Box) -> list[str]:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    out = []
    for t in ticks:
        y = c(ys(t))
        out.append(f'<line class="grid" x1="{c(box.x)}" x2="{c(box.x + box.w)}" y1="{y}" '
                   f'y2="{y}" stroke="#e1e3ea"/>')
        out.append(f'<text class="ytick" x="{c(box.x - 6)}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle">{escape(fmt_tick(t, step))}</text>')
    mid, lx = c(box.y + box.h / 2), c(box.x - LEFT + 12)
    out.append(f'<text class="ylabel" x="{lx}" y="{mid}" text-anchor="middle" font-size="11" '
               f'transform="rotate(-90 {lx} {mid})">{escape(label)}</text>')
    return out


def _x_axis(xs: Scale, values: list[float], label: str, box: Box) -> list[str]:
    base = box.y + box.h
    out, last = [], -math.inf
    for v in values:
        x = xs(v)
        out.append(f'<line class="xtick" x1="{c(x)}" x2="{c(x)}" y1="{c(base)}" '
                   f'y2="{c(base + 5)}" stroke="#333"/>')
        # Every count gets a tick mark; labels are thinned where they would overlap.
        if x - last >= MIN_LABEL_GAP:
            out.append(f'<text class="xlabel-tick" x="{c(x)}" y="{c(base + 17)}" '
                       f'text-anchor="middle">{v:g}</text>')
            last = x
    scale = " (log₂ scale)" if xs.log2 else ""
    out.append(f'<text class="xlabel" x="{c(box.x + box.w / 2)}" y="{c(base + 34)}" '
               f'text-anchor="middle" font-size="11">{escape(label + scale)}</text>')
    return out


def _band(ln: Line, k: int, xs: Scale, ys: Scale) -> str:
    attrs = f'class="band" data-series="{ln.key}" data-panel="{k}"'
    if len(ln.band) == 1:  # one point: the interval is a whisker, a polygon would be invisible
        x, lo, hi = ln.band[0]
        return (f'<line {attrs} x1="{c(xs(x))}" x2="{c(xs(x))}" y1="{c(ys(lo))}" '
                f'y2="{c(ys(hi))}" stroke="{ln.style.color}" stroke-width="6" '
                f'stroke-opacity="{BAND_OPACITY * 2}"/>')
    upper = [f"{c(xs(x))},{c(ys(hi))}" for x, _, hi in ln.band]
    lower = [f"{c(xs(x))},{c(ys(lo))}" for x, lo, _ in reversed(ln.band)]
    return (f'<polygon {attrs} points="{" ".join(upper + lower)}" fill="{ln.style.color}" '
            f'fill-opacity="{BAND_OPACITY}" stroke="none"/>')


# Two 2 px strokes closer than NEAR px overlap or touch; a vertex moves in STEP px steps to clear.
NEAR, STEP = 3.0, 0.5


def dodge(lines: list[list[tuple[float, float]]], box: Box) -> list[list[tuple[float, float]]]:
    """The curves' vertices (pixels), each moved up or down the least (up first, staying in the
    plot) so that its stroke clears the vertices of the curves placed before it: equal curves
    run side by side instead of the last one drawn hiding the others. Markers stay at the
    exact values."""
    placed: list[list[tuple[float, float]]] = []
    shifts = sorted((s * k * STEP for k in range(1, 61) for s in (-1, 1)), key=lambda d: (abs(d), d))
    for pts in lines:
        moved = []
        for i, (x, y) in enumerate(pts):
            taken = [py for other in placed for px, py in other if abs(px - x) < 0.5]
            need = NEAR / _cos(pts, i)
            free = [y + d for d in [0.0, *shifts] if box.y <= y + d <= box.y + box.h
                    and all(abs(py - y - d) >= need for py in taken)]
            moved.append((x, free[0] if free else y))
        placed.append(moved)
    return placed


def _cos(pts: list[tuple[float, float]], i: int) -> float:
    """The cosine of the steepest segment at vertex i: a vertical gap g between two parallel
    strokes is g·cos across them, so a steep curve needs a larger one (bounded at 75°)."""
    cosines = [abs(b[0] - a[0]) / max(math.hypot(b[0] - a[0], b[1] - a[1]), 1e-9)
               for a, b in (pts[j:j + 2] for j in (i - 1, i) if 0 <= j < len(pts) - 1)]
    return max(0.26, min(cosines, default=1.0))


def _curve(ln: Line, k: int, pts: list[tuple[float, float]]) -> str:
    dash_attr = f' stroke-dasharray="{ln.style.dash}"' if ln.style.dash else ""
    return (f'<polyline class="series" data-series="{ln.key}" data-panel="{k}" points="'
            + " ".join(f"{c(x)},{c(y)}" for x, y in pts)
            + f'" fill="none" stroke="{ln.style.color}" stroke-width="2"{dash_attr}>'
            f'<title>{escape(ln.label)}</title></polyline>')


def _markers(ln: Line, k: int, xs: Scale, ys: Scale, size: float) -> list[str]:
    attrs = f'class="marker" data-series="{ln.key}" data-panel="{k}"'
    out = [marker(ln.style, xs(x), ys(y), attrs, size) for x, y in ln.xy]
    out += [f'<circle class="ring" data-series="{ln.key}" data-panel="{k}" cx="{c(xs(x))}" '
            f'cy="{c(ys(y))}" r="{c(MARKER_R * size + 4)}" fill="none" stroke="{ln.style.color}" '
            f'stroke-width="1.5"><title>{escape(ln.label)}: {RING}</title></circle>'
            for x, y in ln.xy if x in ln.rings]
    return out


def marker(st: Style, x: float, y: float, attrs: str = 'class="marker"', size: float = 1.0) -> str:
    """A filled shape centred on (x, y), ``size`` times the standard one, with a white rim so
    that coinciding markers stay apart."""
    paint = f'fill="{st.color}" stroke="#fff" stroke-width="0.8"'
    if st.marker == "circle":
        return f'<circle {attrs} cx="{c(x)}" cy="{c(y)}" r="{c(MARKER_R * size)}" {paint}/>'
    return f'<polygon {attrs} points="{_shape(st.marker, x, y, size)}" {paint}/>'


# (vertex count, rotation in degrees, radius relative to a circle's): about a circle's area.
SHAPES = {"square": (4, 45, 1.25), "triangle": (3, -90, 1.5), "diamond": (4, 0, 1.3),
          "triangle-down": (3, 90, 1.5), "triangle-left": (3, 180, 1.5),
          "triangle-right": (3, 0, 1.5), "pentagon": (5, -90, 1.15)}


def _shape(name: str, x: float, y: float, size: float = 1.0) -> str:
    n, rot, rel = SHAPES[name]
    r = MARKER_R * rel * size
    return " ".join(f"{c(x + r * math.cos(math.radians(rot + 360 * i / n)))},"
                    f"{c(y + r * math.sin(math.radians(rot + 360 * i / n)))}" for i in range(n))


def _legend_entries(panels: list[Panel]) -> list[Line]:
    seen: dict[int, Line] = {}
    for p in panels:
        for ln in p.lines:
            if ln.key not in seen or (ln.band and not seen[ln.key].band):
                seen[ln.key] = ln
    return [seen[k] for k in sorted(seen)]


def _legend(entries: list[Line], width: float) -> tuple[list[str], list[list]]:
    """The shared legend across the top, in rows; the rows are returned to size the figure."""
    items = [(ln.label, ln.style, bool(ln.band), False) for ln in entries]
    if any(ln.rings for ln in entries):
        items.append((RING, Style("#555", "", ""), False, True))
    per_row = max(1, int(width // LEGEND_W))
    rows = [items[i:i + per_row] for i in range(0, len(items), per_row)]
    out = ['<g class="legend">']
    for r, row in enumerate(rows):
        for j, (label, st, band, ring) in enumerate(row):
            out += _legend_item(label, st, band, ring, 8 + j * LEGEND_W, 12 + r * LEGEND_ROW)
    out.append("</g>")
    return out, rows


def _legend_item(label: str, st: Style, band: bool, ring: bool, x0: float, y: float) -> list[str]:
    out = []
    if ring:
        out.append(f'<circle cx="{c(x0 + 14)}" cy="{c(y)}" r="{MARKER_R + 4}" fill="none" '
                   f'stroke="{st.color}" stroke-width="1.5"/>')
    else:
        if band:
            out.append(f'<rect x="{c(x0)}" y="{c(y - 6)}" width="28" height="12" '
                       f'fill="{st.color}" fill-opacity="{BAND_OPACITY}"/>')
        dash_attr = f' stroke-dasharray="{st.dash}"' if st.dash else ""
        out.append(f'<line x1="{c(x0)}" x2="{c(x0 + 28)}" y1="{c(y)}" y2="{c(y)}" '
                   f'stroke="{st.color}" stroke-width="2"{dash_attr}/>')
        out.append(marker(st, x0 + 14, y, 'class="legend-marker"'))
    # Long labels would run into the next entry; the full text stays in the hover title.
    short = label if len(label) <= 26 else label[:25] + "…"
    out.append(f'<text x="{c(x0 + 34)}" y="{c(y)}" dominant-baseline="middle">{escape(short)}'
               f'<title>{escape(label)}</title></text>')
    return out
