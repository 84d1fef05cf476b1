"""The report's validation section: how far predictions landed from measured runs, by W.

Read from a ``sgdsim validate`` ``points.csv`` (``sgdsim report --validation FILE``): every
measured point that is a check (calibration fits left out). The chart draws predicted /
measured in percent against the worker count, one line per model through its mean at each W,
with 100 % dashed: a line that drifts away from it as W grows is a bias, not noise. The table
gives each model's signed mean error and mean |error| per W (``evaluate/bias.py``).
"""
from __future__ import annotations

import csv
from html import escape

from ..errors import ConfigError
from ..evaluate.bias import bias_by_model, bias_by_workers, errors_by_workers
from . import svg
from .tables import table

COLUMNS = {"model", "workers", "measured", "predicted"}


def read_points(path: str) -> tuple[tuple[str, int, float, float], ...]:
    """(model, workers, measured, predicted) of every measured check in a validate points.csv."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if not COLUMNS <= set(reader.fieldnames or ()):
                raise ConfigError(f"--validation {path}: not a points.csv of sgdsim validate "
                                  f"(needs the columns {', '.join(sorted(COLUMNS))})")
            rows = list(reader)
    except OSError as e:
        raise ConfigError(f"--validation {path}: cannot read ({e.strerror})") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"--validation {path}: not a UTF-8 CSV file ({e})") from None
    out = []
    for i, r in enumerate(rows, start=2):
        if not r["measured"] or r.get("fitted") == "1":
            continue
        try:
            out.append((r["model"], int(r["workers"]), float(r["measured"]), float(r["predicted"])))
        except ValueError:
            raise ConfigError(f"--validation {path}: line {i}: workers, measured and predicted "
                              "must be numbers") from None
    if not out:
        raise ConfigError(f"--validation {path}: no measured point to compare")
    return tuple(out)


def section(points, source: str) -> str:
    """The HTML: a heading, the chart and the per-W table."""
    by_w = errors_by_workers(points)
    lines = tuple(svg.Line(m, svg.style(i), tuple((float(w), 100 + sum(e) / len(e))
                                                  for w, e in rows.items()), key=i)
                  for i, (m, rows) in enumerate(by_w.items()))
    top = max(y for ln in lines for _, y in ln.xy)
    chart = svg.small_multiples("fig-validation", "Predicted / measured (%) against workers",
                                "workers", "predicted / measured (%)",
                                [svg.Panel("", lines, max(top, 110.0))], ref_y=100.0)
    overall = bias_by_model(points)
    note = "; ".join(f"{m}: signed mean {b.signed_mean_error_pct:+.1f} %, mean |error| "
                     f"{b.mean_abs_error_pct:.1f} %, {b.too_high} of {b.points} too high"
                     for m, b in overall.items())
    return ("<h2>Validation</h2>\n"
            f'<p class="summary">Measured runs from {escape(source)}: {escape(note)}.</p>\n'
            f"<figure>\n<figcaption>Bias by worker count (100 %: as measured)</figcaption>\n{chart}\n"
            f"</figure>\n{_table(bias_by_workers(points))}")


def _table(by_w) -> str:
    """Per W, each model's signed and absolute mean error and its number of runs: three
    columns a model, so each holds one kind of number."""
    models = list(by_w)
    workers = sorted({w for rows in by_w.values() for w in rows})
    head = ["workers"] + [f"{m}: {what}" for m in models
                          for what in ("signed error (%)", "mean |error| (%)", "runs")]
    rows = [[str(w)] + [cell for m in models for cell in _cells(by_w[m].get(w))] for w in workers]
    return table(head, rows, num_cols=set(range(len(head))))


def _cells(b) -> list[str]:
    if b is None:
        return ["–", "–", "–"]
    return [f"{b.signed_mean_error_pct:+.1f}", f"{b.mean_abs_error_pct:.1f}", str(b.points)]
