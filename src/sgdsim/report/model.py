"""What a report shows: plain frozen dataclasses, checked once when built.

The renderer trusts these values, so anything that would put NaN into an SVG coordinate or a
division by zero into a figure is refused here, as one ``ConfigError`` line, before any HTML is
written.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from ..errors import ConfigError

# Keys of a PredictionPoint.to_dict() row that end up as coordinates or percentages.
NUMERIC_KEYS = ("throughput", "ci_low", "ci_high", "step_time_s")


@dataclass(frozen=True)
class Series:
    """One curve: a profile predicted by one model, ``points`` being ``PredictionPoint.to_dict()``
    rows in any order."""

    label: str
    profile: str
    model: str
    points: tuple[dict, ...]

    def __post_init__(self):
        # Callers often hold lists; a tuple keeps the dataclass honest about immutability.
        object.__setattr__(self, "points", tuple(self.points))
        check_series(self)

    def sorted_points(self) -> list[dict]:
        return sorted(self.points, key=lambda p: p["workers"])


@dataclass(frozen=True)
class ReportInput:
    title: str
    series: tuple[Series, ...]
    profiles: tuple[dict, ...]
    inputs: tuple[tuple[str, str], ...] = ()  # (input, value) rows (report/inputs.py)
    hardware: dict | None = None
    timeline: str | None = None
    generated_by: str = ""
    validation: tuple = ()  # (model, workers, measured, predicted) checks (report/validation.py)
    validation_source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "series", tuple(self.series))
        object.__setattr__(self, "profiles", tuple(self.profiles))
        object.__setattr__(self, "inputs", tuple((str(k), str(v)) for k, v in self.inputs))
        check_report(self)


def low(p: dict) -> float:
    """A point's interval, its throughput where it has none."""
    return p["throughput"] if p.get("ci_low") is None else p["ci_low"]


def high(p: dict) -> float:
    return p["throughput"] if p.get("ci_high") is None else p["ci_high"]


def check_report(report: ReportInput) -> None:
    """Re-runnable: the point dicts stay mutable, so the renderer checks again before drawing."""
    if not report.series:
        raise ConfigError("report: no series to plot (no prediction was made)")
    for s in report.series:
        if not isinstance(s, Series):
            raise ConfigError(f"report: expected Series objects, got {type(s).__name__}")
        check_series(s)


def check_series(series: Series) -> None:
    if not series.points:
        raise ConfigError(f"report: series {series.label!r} has no points")
    for p in series.points:
        _check_point(series.label, p)


def _check_point(label: str, p: dict) -> None:
    if not isinstance(p, dict):
        raise ConfigError(f"report: series {label!r}: expected point dicts, got {type(p).__name__}")
    w = p.get("workers")
    # bool is an int subclass (True would silently plot at W=1); numpy integers are fine.
    if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1:
        raise ConfigError(f"report: series {label!r}: workers must be an integer >= 1, got {w!r}")
    where = f"report: series {label!r}, W={w}"
    if "throughput" not in p:
        raise ConfigError(f"{where}: the point has no throughput")
    for key in NUMERIC_KEYS:
        if key in p and p[key] is not None:
            _check_number(where, key, p[key])
    if p["throughput"] < 0:
        raise ConfigError(f"{where}: throughput {p['throughput']!r} is negative")
    for res, u in (p.get("utilization") or {}).items():
        _check_number(where, f"utilization[{res}]", u)
    for r in p.get("regimes") or ():
        for key in ("throughput", "share"):
            _check_number(where, f"regimes {key}", r.get(key))


def _check_number(where: str, key: str, value) -> None:
    try:
        ok = math.isfinite(float(value))
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool):
        raise ConfigError(f"{where}: {key} is {value!r} (expected a finite number)")
