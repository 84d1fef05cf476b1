"""The report's tables: one number format per column, units in the headers, and no column
that holds no value in any row.

A column's decimals are chosen once, from its smallest non-zero value (three significant
digits there), so a column never mixes 82.16 with 1,154; thousands are always separated.
"""
from __future__ import annotations

import json
import math
import numbers
from html import escape

from ..point import SATURATED
from .model import Series, high, low

EMPTY = ("", "–", "-")  # what a cell without a value shows
PROFILE_HEADERS = {"name": "profile", "path": "file", "batch_size": "batch (examples)",
                   "parameters_MB": "parameters (MB)", "compute_ms": "compute per step (ms)",
                   "ops": "ops", "overlap": "overlap"}


def decimals(values) -> int:
    """Decimals that give the column's smallest non-zero value three significant digits (0
    to 3); whole numbers get none."""
    xs = [abs(float(v)) for v in values if v is not None]
    if all(float(x).is_integer() for x in xs):
        return 0
    small = min((x for x in xs if x > 0), default=1.0)
    return min(3, max(0, 2 - math.floor(math.log10(small))))


def fmt(x: float, places: int) -> str:
    return f"{float(x):,.{places}f}"


def table(head, rows, num_cols=frozenset()) -> str:
    """An HTML table, less every column with no value in any row."""
    keep = [i for i in range(len(head)) if any(r[i] not in EMPTY for r in rows)]
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(head[i])}</th>" for i in keep) + "</tr>"]
    for row in rows:
        cells = "".join(f'<td class="num">{escape(row[i])}</td>' if i in num_cols
                        else f"<td>{escape(row[i])}</td>" for i in keep)
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)



def points_table(series: tuple[Series, ...]) -> str:
    pairs = [(s, p) for s in series for p in s.sorted_points()]
    pts = [p for _, p in pairs]
    thr = decimals([v for p in pts for v in (p["throughput"], low(p), high(p))])
    step = decimals([1000 * p["step_time_s"] for p in pts if p.get("step_time_s") is not None])
    level = max((p.get("interval_level") or 0.95 for p in pts), default=0.95)
    head = ("series", "W", "throughput (examples/s)", f"{100 * level:.0f} % interval (examples/s)",
            "step time (ms)", "bottleneck", "utilization (%)", "two regimes (examples/s, share)")
    rows = [_point_row(s, p, thr, step) for s, p in pairs]
    return table(head, rows, num_cols={1, 2, 3, 4, 6}) + _margin_note(series, level)


def _point_row(s: Series, p: dict, thr: int, step: int) -> list[str]:
    lo, hi = low(p), high(p)
    interval = "–" if lo == hi == p["throughput"] else f"{fmt(lo, thr)} – {fmt(hi, thr)}"
    st = p.get("step_time_s")
    name = p.get("bottleneck") or ""
    util = (p.get("utilization") or {}).get(name)
    # Below SATURATED no resource bounds throughput: the busiest is named as such.
    who = "–" if not name else name if (util or 0.0) >= SATURATED else f"none (busiest: {name})"
    regimes = p.get("regimes") or ()
    note = " / ".join(f"{fmt(r['throughput'], thr)} ({100 * r['share']:.0f} %)"
                      for r in regimes) if len(regimes) == 2 else ""
    return [s.label, str(p["workers"]), fmt(p["throughput"], thr), interval,
            "–" if st is None else fmt(1000 * st, step), who,
            "–" if util is None else fmt(100 * util, 0), note]


def _margin_note(series: tuple[Series, ...], level: float) -> str:
    """Which model's error each interval holds, per model: the models' margins differ."""
    margins = {s.model: (p.get("model_error_rel") or 0.0, p.get("margin_source") or "")
               for s in series for p in s.points if (p.get("model_error_rel") or 0.0) > 0}
    if not margins:
        return ""
    sources = sorted({src for _, src in margins.values() if src})
    each = (f"±{100 * next(iter(margins.values()))[0]:.1f} %" if len(margins) == 1 else
            ", ".join(f"{m} ±{100 * e:.1f} %" for m, (e, _) in margins.items()))
    return (f"<p>{100 * level:.0f} % interval: where one real run lands, the model's own error ({each}"
            f"{', ' + escape('; '.join(sources)) if sources else ''}) included.</p>")


def profiles_table(profiles: tuple[dict, ...]) -> str:
    keys = list(dict.fromkeys(k for p in profiles for k in p))
    columns = {k: [p.get(k) for p in profiles] for k in keys}
    numeric = {k for k, vs in columns.items()
               if all(_is_number(v) for v in vs if v is not None) and any(v is not None for v in vs)}
    places = {k: decimals(columns[k]) for k in numeric}
    rows = [[_cell(p.get(k), places.get(k)) for k in keys] for p in profiles]
    head = [PROFILE_HEADERS.get(k, k) for k in keys]
    return table(head, rows, num_cols={i for i, k in enumerate(keys) if k in numeric})


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _cell(v, places: int | None) -> str:
    if v is None:
        return "–"
    if places is not None:
        return fmt(v, places)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=str)
    return str(v)
