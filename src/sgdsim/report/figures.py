"""The report's three figures, as small multiples: throughput and scaling efficiency with one
panel per profile (a curve per model), utilization with one panel per resource (a curve per
profile). Each model keeps one style across the figures, each profile one in the utilization
figure; ``svg.py`` draws them."""
from __future__ import annotations

from ..point import SATURATED
from . import svg
from .model import Series, high, low



def by_profile(series: tuple[Series, ...]) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = {}
    for s in series:
        out.setdefault(s.profile, []).append(s)
    return out


def _model_keys(series: tuple[Series, ...]) -> dict[str, int]:
    return {m: i for i, m in enumerate(dict.fromkeys(s.model for s in series))}


def _label(s: Series, one_profile: bool) -> str:
    """Within a profile's panel the model names the curve; the legend is shared by all panels."""
    return s.model if not one_profile else s.label


def throughput_svg(series: tuple[Series, ...]) -> tuple[str, str]:
    keys, groups = _model_keys(series), by_profile(series)
    panels = []
    for profile, members in groups.items():
        lines, top = [], 0.0
        for s in members:
            pts = s.sorted_points()
            band = tuple((p["workers"], low(p), high(p)) for p in pts)
            # Analytic models report ci == throughput: a zero-width band would only blur the line.
            if all(lo == p["throughput"] == hi for (_, lo, hi), p in zip(band, pts)):
                band = None
            k = keys[s.model]
            lines.append(svg.Line(_label(s, len(groups) == 1), svg.style(k),
                                  tuple((p["workers"], p["throughput"]) for p in pts), band, key=k))
            top = max([top] + [max(p["throughput"], high(p)) for p in pts])
        panels.append(svg.Panel(profile, tuple(lines), top))
    chart = svg.small_multiples("fig-throughput", "Throughput (examples/s) against workers",
                                "workers", "examples/s", panels)
    return chart, "(one panel per profile, each with its own y axis)" if len(panels) > 1 else ""


def efficiency(points: list[dict]) -> list[tuple[int, float]] | None:
    """(W, % of linear scaling from the smallest W), or None when that throughput is 0 and no
    ratio exists."""
    base = points[0]
    if base["throughput"] <= 0:
        return None
    per_worker = base["throughput"] / base["workers"]
    return [(p["workers"], 100.0 * p["throughput"] / (p["workers"] * per_worker)) for p in points]


def efficiency_svg(series: tuple[Series, ...]) -> tuple[str, str]:
    keys, groups = _model_keys(series), by_profile(series)
    panels, skipped = [], []
    for profile, members in groups.items():
        lines = []
        for s in members:
            eff = efficiency(s.sorted_points())
            if eff is None:
                skipped.append(s.label)
                continue
            k = keys[s.model]
            lines.append(svg.Line(_label(s, len(groups) == 1), svg.style(k), tuple(eff), key=k))
        panels.append(svg.Panel(profile, tuple(lines), 0.0))
    # One y axis for all panels (a percentage compares across profiles), with headroom above
    # 100 % so the reference line and a linear curve do not hide in the frame.
    top = max([110.0] + [e for p in panels for ln in p.lines for _, e in ln.xy])
    panels = [svg.Panel(p.title, p.lines, top) for p in panels]
    chart = svg.small_multiples("fig-efficiency", "Scaling efficiency (%) against workers",
                                "workers", "% of linear from the smallest W", panels, ref_y=100.0)
    note = f"(not drawn, throughput 0 at the smallest W: {', '.join(skipped)})" if skipped else ""
    return chart, f"(throughput(W) / (W × throughput(W₀) / W₀), W₀ the smallest W) {note}".strip()


def utilization_series(series: tuple[Series, ...]) -> list[Series]:
    """Per profile, the simulator's series (its utilization comes from simulated queues); the
    analytic models' numbers only when the simulator did not run for that profile."""
    return [next((s for s in members if s.model == "fine"), members[0])
            for members in by_profile(series).values()]


def utilization_svg(series: tuple[Series, ...]) -> tuple[str, str]:
    chosen = utilization_series(series)
    resources = _resources([p for s in chosen for p in s.points])
    idle = [r for r in resources if not any(p.get("utilization", {}).get(r, 0.0) > 0
                                            for s in chosen for p in s.points)]
    panels = []
    for res in (r for r in resources if r not in idle):
        lines = []
        for k, s in enumerate(chosen):
            pts = [p for p in s.sorted_points() if res in (p.get("utilization") or {})]
            if not pts:
                continue
            # The table names a point's bottleneck only when it is saturated: ring those.
            rings = frozenset(p["workers"] for p in pts if p.get("bottleneck") == res
                              and p["utilization"][res] >= SATURATED)
            lines.append(svg.Line(s.label, svg.style(k), tuple(
                (p["workers"], 100.0 * p["utilization"][res]) for p in pts), rings=rings, key=k))
        panels.append(svg.Panel(res, tuple(lines), 100.0))
    names = ", ".join(s.label for s in chosen)
    if not panels:
        return svg.small_multiples("fig-utilization", "Utilization (%) against workers", "workers",
                                   "utilization (%)", [svg.Panel("", (), 100.0)]), \
            f"({names}: no utilization recorded)"
    chart = svg.small_multiples("fig-utilization", "Utilization (%) of each resource against "
                                "workers", "workers", "utilization (%)", panels)
    idle_note = f"; idle throughout, not drawn: {', '.join(idle)}" if idle else ""
    return chart, f"(one panel per resource; {names}{idle_note})"


def _resources(points: list[dict]) -> list[str]:
    seen: dict[str, None] = {}
    for p in points:
        seen.update(dict.fromkeys(p.get("utilization") or {}))
    return list(seen)
