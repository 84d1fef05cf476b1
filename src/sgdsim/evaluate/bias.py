"""Bias of the predictions, not only their size: the signed error per model and per worker count.

A point is ``(model, workers, measured, predicted)`` in examples/s; its error is
``predicted / measured − 1`` in percent, positive when the model predicts more than was
measured ("too high"). A point without a measurement (``measured`` None or not > 0) or
without a prediction is ignored. Calibration fits are the caller's to leave out.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..analytic.models import MODELS


@dataclass(frozen=True)
class Bias:
    """The errors of one group of points (a model, or a model at one worker count)."""

    points: int
    mean_abs_error_pct: float
    max_abs_error_pct: float
    signed_mean_error_pct: float
    too_high: int  # points predicted above their measurement

    @classmethod
    def of(cls, errors: list[float]) -> Bias:
        if not errors:
            raise ValueError("no errors to summarise")
        absolute = [abs(e) for e in errors]
        return cls(points=len(errors), mean_abs_error_pct=sum(absolute) / len(errors),
                   max_abs_error_pct=max(absolute), signed_mean_error_pct=sum(errors) / len(errors),
                   too_high=sum(e > 0 for e in errors))

    def to_dict(self) -> dict:
        return asdict(self)


def error_pct(measured: float | None, predicted: float | None) -> float | None:
    """``100 (predicted / measured − 1)``; None without a measurement or a prediction."""
    if measured is None or predicted is None or not measured > 0 or not math.isfinite(measured):
        return None
    return 100.0 * (predicted / measured - 1.0)


def model_order(models) -> list[str]:
    """The models in the CLI's order (unknown names last, alphabetically)."""
    return sorted(set(models), key=lambda m: (MODELS.index(m) if m in MODELS else len(MODELS), m))


def errors_by_workers(points) -> dict[str, dict[int, list[float]]]:
    """{model: {workers: [error %, in the points' order]}}, models in order, W ascending."""
    grouped: dict[str, dict[int, list[float]]] = {}
    for model, workers, measured, predicted in points:
        err = error_pct(measured, predicted)
        if err is not None:
            grouped.setdefault(model, {}).setdefault(int(workers), []).append(err)
    return {m: dict(sorted(grouped[m].items())) for m in model_order(grouped)}


def bias_by_model(points) -> dict[str, Bias]:
    """{model: Bias} over all the measured points of each model."""
    return {m: Bias.of([e for errs in by_w.values() for e in errs])
            for m, by_w in errors_by_workers(points).items()}


def bias_by_workers(points) -> dict[str, dict[int, Bias]]:
    """{model: {workers: Bias}}: the same figures at each worker count."""
    return {m: {w: Bias.of(errs) for w, errs in by_w.items()}
            for m, by_w in errors_by_workers(points).items()}


def by_workers_json(by_w: dict[str, dict[int, Bias]]) -> dict[str, list[dict]]:
    """``bias_by_workers`` as JSON: {model: [{"workers", "points", ..., "too_high"}]}."""
    return {m: [{"workers": w, **b.to_dict()} for w, b in rows.items()] for m, rows in by_w.items()}


def signed(x: float) -> str:
    return f"{x:+.1f} %"


def by_workers_table(by_w: dict[str, dict[int, Bias]]) -> list[str]:
    """Markdown: one row per worker count, one column per model holding its signed mean
    error / mean |error| (points); "-" where the model has no measured point at that W."""
    if not by_w:
        return []
    models = list(by_w)
    workers = sorted({w for rows in by_w.values() for w in rows})
    lines = ["| W | " + " | ".join(f"{m}: signed / mean \\|error\\| (n)" for m in models) + " |",
             "|---:|" + "---:|" * len(models)]
    for w in workers:
        cells = [_cell(by_w[m].get(w)) for m in models]
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    return lines


def _cell(b: Bias | None) -> str:
    if b is None:
        return "-"
    return f"{signed(b.signed_mean_error_pct)} / {b.mean_abs_error_pct:.1f} % ({b.points})"
