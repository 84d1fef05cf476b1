"""Text output of predictions: a table (one model, or models side by side), CSV, JSON."""
from __future__ import annotations

import json
import math

from ..point import bottleneck_text
from ..replicate import stop_notes

TABLE_COLS = ("workers", "model", "throughput", "ci_low", "ci_high", "step_time_s", "bottleneck", "ops_simulated")


def format_points(points, fmt: str) -> str:
    rows = [p.to_dict() for p in points]
    if fmt == "json":  # strict JSON: an unknown bound is null, never Infinity
        return json.dumps(_finite(rows), indent=2, allow_nan=False)
    if fmt == "table" and len({r["model"] for r in rows}) > 1:
        return _side_by_side(rows)
    util_keys = sorted({k for r in rows for k in r["utilization"]})
    if fmt == "csv":
        head = list(TABLE_COLS) + ["steps_measured"] + [f"util_{k}" for k in util_keys]
        lines = [",".join(head)]
        for r in rows:
            vals = [r[c] for c in TABLE_COLS] + [r["steps_measured"]]
            vals += [round(r["utilization"].get(k, 0.0), 6) for k in util_keys]
            lines.append(",".join(_csv(v) for v in vals))
        return "\n".join(lines)
    return _table(rows)


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _csv(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _table(rows) -> str:
    head = ["workers", "examples/s", f"{_level(rows):.0%} interval", "step time", "bottleneck (util)",
            "ops simulated"]
    body = []
    for r in rows:
        simulated = r["model"] == "fine"
        body.append([str(r["workers"]), f"{r['throughput']:.1f}",
                     f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}]" if _has_interval(r) else "exact (model)",
                     f"{r['step_time_s'] * 1e3:.1f} ms", bottleneck_text(r),
                     f"{r['ops_simulated']:,}" if simulated else "-"])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*line) for line in [head, *body]] + _regime_notes(rows)
                     + _margin_note(rows))


def _level(rows) -> float:
    return max((r.get("interval_level") or 0.95 for r in rows), default=0.95)


def _has_interval(r) -> bool:
    return r["model"] == "fine" or r["ci_high"] > r["ci_low"]


def _margin_note(rows) -> list[str]:
    """What the interval holds besides the simulator's runs: the model's own error."""
    errors = {r["model"]: (r.get("model_error_rel") or 0.0, r.get("margin_source", "")) for r in rows
              if (r.get("model_error_rel") or 0.0) > 0}
    if not errors:
        return []
    source = next(s for _, s in errors.values())
    what = ", ".join(f"{m} ±{e:.1%}" for m, (e, _) in errors.items())
    return [f"{_level(rows):.0%} interval: where one real run lands, the model's error "
            f"({what}{', ' + source if source else ''}) included; --model-error 0 gives the "
            "simulator's spread alone, --interval-level 80%..95% another level"]


def _regime_notes(rows) -> list[str]:
    """One line per bimodal point: both regimes and how often the runs fell into each; then
    the points whose mean is known to less than the target, grouped."""
    notes = []
    for r in rows:
        if r.get("regimes"):
            lo, hi = r["regimes"]
            notes.append(f"W={r['workers']}: two regimes over {r['replications']} runs: "
                         f"{lo['throughput']:.1f} examples/s ({lo['share']:.0%} of runs) or "
                         f"{hi['throughput']:.1f} ({hi['share']:.0%}); the interval covers both")
    return notes + stop_notes(rows)


def _side_by_side(rows) -> str:
    """One line per worker count, one throughput column per model (examples/s)."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    by_w: dict[int, dict[str, dict]] = {}
    for r in rows:
        by_w.setdefault(r["workers"], {})[r["model"]] = r
    head = ["workers"] + models + ["fine bottleneck" if "fine" in models else "bottleneck"]
    body = []
    for w, per in by_w.items():
        cells = [str(w)]
        for m in models:
            r = per.get(m)
            cells.append("-" if r is None else f"{r['throughput']:.1f}" + (
                f" ±{(r['ci_high'] - r['ci_low']) / 2:.1f}" if _has_interval(r) else ""))
        ref = per.get("fine") or next(iter(per.values()))
        cells.append(bottleneck_text(ref))
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    lines = [fmt.format(*line) for line in [head, *body]] + [
        f"(examples/s; ± half the {_level(rows):.0%} interval)"]
    return "\n".join(lines + _regime_notes(rows) + _margin_note(rows))
