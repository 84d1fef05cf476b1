"""Inline-SVG line charts, written as text so that a report needs no plotting library and no
JavaScript: the page draws in any browser, offline.

The output is also well-formed XML (no ``xmlns``: an HTML parser puts inline ``<svg>`` in the
SVG namespace by itself, and leaving out the URL keeps the page free of anything that looks
like a remote resource), which lets tests parse a figure with ElementTree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Okabe-Ito, reordered so the first colours are the most distinct on white; yellow, the
# weakest on white, comes last before black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
DASHES = ("", "7 4", "2 3", "9 3 2 3")
# A tint used nowhere else: it marks the plot areas, which the browser test locates by it.
PLOT_BG = "#f6f7fb"
BAND_OPACITY = 0.18

WIDTH, HEIGHT = 820, 360
LEFT, RIGHT, TOP, BOTTOM = 72, 260, 16, 52
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
# Markers at the first and last worker counts would sit on the frame otherwise.
X_PAD = 12
MIN_LABEL_GAP = 30  # px between x tick labels, so 1..64 on a log axis stays readable


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def dash(i: int) -> str:
    """Past the palette, curves differ by dash pattern instead of by colour alone."""
    return DASHES[(i // len(PALETTE)) % len(DASHES)]


@dataclass(frozen=True)
class Line:
    label: str
    color: str
    dash: str
    xy: tuple[tuple[float, float], ...]                       # sorted by x
    band: tuple[tuple[float, float, float], ...] | None = None  # (x, low, high)


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


def x_scale(xs: list[int]) -> Scale:
    lo, hi = min(xs), max(xs)
    # A wide range of worker counts (1..64) crowds the small counts on a linear axis.
    if hi / lo >= 16:
        return Scale(lo, hi, LEFT + X_PAD, LEFT + PLOT_W - X_PAD, log2=True)
    return Scale(0, hi, LEFT + X_PAD, LEFT + PLOT_W - X_PAD)


def y_scale(ticks: list[float]) -> Scale:
    return Scale(0, ticks[-1], TOP + PLOT_H, TOP)


def line_chart(fig_id: str, title: str, x_label: str, y_label: str, lines: list[Line],
               y_top: float, y_fmt=fmt_tick, ref_y: float | None = None) -> str:
    """A complete ``<svg>``: frame, axes, optional dashed reference line, bands, curves, legend.

    ``y_top``: the largest value the y axis must show (ticks are rounded up from it).
    """
    xs = sorted({x for ln in lines for x, _ in ln.xy}) or [1]
    xs_ = x_scale(xs)
    ticks = nice_ticks(y_top)
    ys_ = y_scale(ticks)
    parts = [f'<svg id="{fig_id}" role="img" aria-labelledby="{fig_id}-title" width="{WIDTH}" '
             f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-size="12" '
             f'font-family="sans-serif">',
             f'<title id="{fig_id}-title">{escape(title)}</title>',
             f'<rect class="plot-area" x="{LEFT}" y="{TOP}" width="{PLOT_W}" height="{PLOT_H}" '
             f'fill="{PLOT_BG}" stroke="#999"/>']
    parts += _y_axis(ys_, ticks, y_label, y_fmt)
    parts += _x_axis(xs_, xs, x_label)
    if ref_y is not None:
        y = c(ys_(ref_y))
        parts.append(f'<line class="reference" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y}" '
                     f'y2="{y}" stroke="#555" stroke-dasharray="4 4"/>')
    for i, ln in enumerate(lines):
        if ln.band:
            parts.append(_band(ln, i, xs_, ys_))
    for i, ln in enumerate(lines):
        parts += _curve(ln, i, xs_, ys_)
    parts += _legend(lines)
    parts.append("</svg>")
    return "\n".join(parts)


def _y_axis(ys: Scale, ticks: list[float], label: str, y_fmt) -> list[str]:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    out = []
    for t in ticks:
        y = c(ys(t))
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y}" y2="{y}" '
                   f'stroke="#e1e3ea"/>')
        out.append(f'<text class="ytick" x="{LEFT - 6}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle">{escape(y_fmt(t, step))}</text>')
    mid = c(TOP + PLOT_H / 2)
    out.append(f'<text class="ylabel" x="16" y="{mid}" text-anchor="middle" '
               f'transform="rotate(-90 16 {mid})">{escape(label)}</text>')
    return out


def _x_axis(xs: Scale, values: list[int], label: str) -> list[str]:
    base = TOP + PLOT_H
    out, last = [], -math.inf
    for v in values:
        x = xs(v)
        out.append(f'<line class="xtick" x1="{c(x)}" x2="{c(x)}" y1="{base}" y2="{base + 5}" '
                   f'stroke="#333"/>')
        # Every count gets a tick mark; labels are thinned where they would overlap.
        if x - last >= MIN_LABEL_GAP:
            out.append(f'<text class="xlabel-tick" x="{c(x)}" y="{base + 18}" '
                       f'text-anchor="middle">{v:g}</text>')
            last = x
    scale = " (log₂ scale)" if xs.log2 else ""
    out.append(f'<text class="xlabel" x="{c(LEFT + PLOT_W / 2)}" y="{HEIGHT - 10}" '
               f'text-anchor="middle">{escape(label + scale)}</text>')
    return out


def _band(ln: Line, i: int, xs: Scale, ys: Scale) -> str:
    if len(ln.band) == 1:  # one point: the interval is a whisker, a polygon would be invisible
        x, lo, hi = ln.band[0]
        return (f'<line class="band" data-series="{i}" x1="{c(xs(x))}" x2="{c(xs(x))}" '
                f'y1="{c(ys(lo))}" y2="{c(ys(hi))}" stroke="{ln.color}" stroke-width="6" '
                f'stroke-opacity="{BAND_OPACITY * 2}"/>')
    upper = [f"{c(xs(x))},{c(ys(hi))}" for x, _, hi in ln.band]
    lower = [f"{c(xs(x))},{c(ys(lo))}" for x, lo, _ in reversed(ln.band)]
    return (f'<polygon class="band" data-series="{i}" points="{" ".join(upper + lower)}" '
            f'fill="{ln.color}" fill-opacity="{BAND_OPACITY}" stroke="none"/>')


def _curve(ln: Line, i: int, xs: Scale, ys: Scale) -> list[str]:
    pts = [(xs(x), ys(y)) for x, y in ln.xy]
    dash_attr = f' stroke-dasharray="{ln.dash}"' if ln.dash else ""
    out = [f'<polyline class="series" data-series="{i}" points="'
           + " ".join(f"{c(x)},{c(y)}" for x, y in pts)
           + f'" fill="none" stroke="{ln.color}" stroke-width="2"{dash_attr}>'
           f'<title>{escape(ln.label)}</title></polyline>']
    out += [f'<circle class="marker" data-series="{i}" cx="{c(x)}" cy="{c(y)}" r="4" '
            f'fill="{ln.color}"/>' for x, y in pts]
    return out


def _legend(lines: list[Line]) -> list[str]:
    x0 = LEFT + PLOT_W + 14
    out = ['<g class="legend">']
    for i, ln in enumerate(lines):
        y = TOP + 10 + 20 * i
        dash_attr = f' stroke-dasharray="{ln.dash}"' if ln.dash else ""
        if ln.band:
            out.append(f'<rect x="{x0}" y="{y - 6}" width="24" height="12" fill="{ln.color}" '
                       f'fill-opacity="{BAND_OPACITY}"/>')
        out.append(f'<line x1="{x0}" x2="{x0 + 24}" y1="{y}" y2="{y}" stroke="{ln.color}" '
                   f'stroke-width="2"{dash_attr}/>')
        # Long labels would run off the figure; the full text stays in the hover title.
        short = ln.label if len(ln.label) <= 32 else ln.label[:31] + "…"
        out.append(f'<text x="{x0 + 30}" y="{y}" dominant-baseline="middle">{escape(short)}'
                   f'<title>{escape(ln.label)}</title></text>')
    out.append("</g>")
    return out
