"""The outputs of ``sgdsim validate``: points.csv, summary.md/.json, plots/, profiles/.

Error of a prediction: ``predicted / measured − 1`` in percent (negative = the model predicts
less than was measured). Summaries are means and maxima of its absolute value, and its signed
mean with how many points were predicted too high, per model and per worker count (``bias``).
"""
from __future__ import annotations

import csv
import io
import json
import math
import os

from ..errors import ConfigError
from ..evaluate.margin import MODEL_ERROR_REL, conformal_margin, coverage, run_score
from ..evaluate.bias import bias_by_model, bias_by_workers, by_workers_json, by_workers_table, signed
from .grid import Case, fingerprint, input_files

CSV_COLUMNS = ("case", "model", "workers", "measured", "predicted", "error_pct", "measured_runs",
               "interval_low", "interval_high", "fitted")
SUMMARY_FORMAT = "sgdsim-validation-summary"
BIAS_PLOT = "bias_by_workers"  # plots/bias_by_workers.png: signed error against W, all cases


def output_files(outdir: str, cases) -> list[str]:
    """Every file a run writes (checked before anything runs)."""
    names = ["points.csv", "summary.md", "summary.json", os.path.join("plots", f"{BIAS_PLOT}.png")]
    for case in cases:
        if case.name == BIAS_PLOT:
            raise ConfigError(f"a case may not be named {BIAS_PLOT}: plots/{BIAS_PLOT}.png is the "
                              "plot of the error against the worker count over all cases")
        names += [os.path.join("plots", f"{case.name}.png"),
                  os.path.join("profiles", f"{case.name}.json")]
    return [os.path.join(outdir, n) for n in names]


def check_targets(targets: list[str], force: bool) -> None:
    outdir = os.path.dirname(targets[0]) or "."
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ConfigError(f"output folder {outdir} exists and is not a folder")
    for t in targets:
        if os.path.isdir(t):
            raise ConfigError(f"cannot write {t}: it is a folder")
        if os.path.exists(t) and not force:
            raise ConfigError(f"{t} exists; refusing to overwrite (use --force or another -o folder)")


# ----------------------------------------------------------------------------- points

def write_points(result, path: str) -> None:
    """One row per (case, model, workers): every one in a dry run, else the measured ones (a
    run writes the file after every point, so it holds what was measured when it stops)."""
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    for cr in result.cases:
        for p in cr.points:
            if not result.dry_run and p.workers not in cr.measured_runs:
                continue
            runs = cr.measured_runs.get(p.workers, [])
            w.writerow([p.case, p.model, p.workers, _num(p.measured), _num(p.predicted),
                        _num(p.error_pct), ";".join(_run(x) for x in runs),
                        _num(p.low), _num(p.high), "1" if p.fitted else ""])
    _write_text(path, out.getvalue())


def _write_text(path: str, text: str) -> None:
    """Write through a temporary file: a run stopped mid-write keeps the file's last version."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".part", "w", newline="", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".part", path)


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.10g}"


def _run(x: float) -> str:
    """A run's examples/s, read back as the same number (``--resume`` and ``--measured``
    compute from it what the run computed): short where that is exact."""
    short = f"{x:.6g}"
    return short if float(short) == x else repr(x)


def measured_runs(path: str) -> dict[tuple[str, int], list[float]]:
    """{(case, workers): the measured runs, examples/s} of an earlier ``points.csv`` (a row per
    model, each with the point's runs) or of a file without a ``model`` column, whose rows
    each add runs (``examples/lab/more_runs.py`` writes one per run)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not {"case", "workers", "measured_runs"} <= set(reader.fieldnames or ()):
        raise ConfigError(f"{path}: not a points.csv of sgdsim validate (no case, workers and "
                          f"measured_runs columns)")
    per_model = "model" in (reader.fieldnames or ())
    runs: dict[tuple[str, int], list[float]] = {}
    try:
        for r in rows:
            if r.get("measured_runs"):
                got = [float(x) for x in r["measured_runs"].split(";")]
                key = (r["case"], int(r["workers"]))
                runs[key] = got if per_model else runs.get(key, []) + got
    except (KeyError, ValueError):
        raise ConfigError(f"{path}: not a points.csv of sgdsim validate (case, workers, "
                          f"measured_runs columns)") from None
    return runs


def write_plot(case_result, path: str) -> None:
    from .plot import plot_case

    os.makedirs(os.path.dirname(path), exist_ok=True)
    plot_case(case_result, path)


# ----------------------------------------------------------------------------- summary

def checks(points) -> list[tuple]:
    """(model, workers, measured, predicted) of the points that are checks (calibration
    points are fits: left out); ``bias`` ignores the unmeasured ones."""
    return [(p.model, p.workers, p.measured, p.predicted) for p in points if not p.fitted]


def error_stats(points) -> dict[str, dict]:
    """{model: {points, mean_abs_error_pct, max_abs_error_pct, signed_mean_error_pct, too_high[,
    interval_coverage]}} over the measured points that are checks; coverage: the share of
    points whose 95 % interval holds the measurement."""
    covered: dict[str, list[bool]] = {}
    for p in points:
        if not p.fitted and p.covered is not None:
            covered.setdefault(p.model, []).append(p.covered)
    out = {m: b.to_dict() for m, b in bias_by_model(checks(points)).items()}
    for m, stats in out.items():
        if covered.get(m):
            stats["interval_coverage"] = sum(covered[m]) / len(covered[m])
    return out


def error_by_workers(points) -> dict[str, list[dict]]:
    """{model: [{workers, points, mean_abs_error_pct, ..., too_high}]} over the checks."""
    return by_workers_json(bias_by_workers(checks(points)))


def point_counts(result) -> tuple[int, int]:
    """(measured, all) points, a point being one worker count of one case."""
    return (sum(len(cr.measured_runs) for cr in result.cases),
            sum(len(cr.case.workers) for cr in result.cases))


def summary_dict(result) -> dict:
    measured, total = point_counts(result)
    return {
        "format": SUMMARY_FORMAT, "version": 1, "grid": result.grid.path,
        "grid_sha256": fingerprint(result.grid),  # --resume continues only the same grid
        "inputs_sha256": {shown_path(p): sha for p, sha in input_files(result.grid).items()},
        "description": result.grid.description, "dry_run": result.dry_run,
        "points_measured": measured, "points_total": total,
        "error": "predicted / measured - 1, percent",
        "overall": error_stats(result.points),
        "error_by_workers": error_by_workers(result.points),
        **({"single_runs": runs} if (runs := single_runs(result)) else {}),
        "cases": [_case_dict(cr) for cr in result.cases],
    }


def shown_path(path: str) -> str:
    """A file the summary names, relative to where the run was started when it lies below it:
    a summary committed from a checkout names no path of the machine it was made on (grid
    files are read by absolute path). ``--resume`` reads them from the same place."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _case_dict(cr) -> dict:
    rows = []
    for w in cr.case.workers:
        preds = {p.model: p.predicted for p in cr.points if p.workers == w}
        rows.append({"workers": w, "measured": cr.measured.get(w), "predicted": preds})
    config = {k: shown_path(v) if k in ("profile", "hardware") and v else v for k, v in cr.case.to_dict().items()}
    return {"name": cr.case.name, "config": config, "errors": error_stats(cr.points),
            "skipped": list(cr.skipped), "points": rows,
            **({"calibration": cr.calibration} if cr.calibration else {})}


def summary_markdown(result, with_details: bool = True) -> str:
    g = result.grid
    head = [f"# Validation: {g.path}", ""] + ([g.description, ""] if g.description else [])
    n, total = point_counts(result)
    if result.dry_run:
        head += ["Dry run: predictions only, nothing measured.", ""]
    else:
        if n < total:
            head += [f"Incomplete: {n} of {total} points measured so far; `sgdsim validate` "
                     "with `--resume` measures the rest.", ""]
        head += [f"{len(result.cases)} case(s), {n} measured point(s). Error = predicted / "
                 "measured − 1; the tables give the mean and max of its absolute value, its signed "
                 "mean (positive: the model predicts more than was measured) and how many points "
                 "it predicts too high.", ""]
        head += ["## Overall", ""] + _stats_table([(None, error_stats(result.points))], False)
        head += _runs_text(single_runs(result))
        head += ["", *_by_workers_section(result.points)]
        head += ["", "## Per case", ""]
        head += _stats_table([(cr.case.name, error_stats(cr.points)) for cr in result.cases], True)
    if with_details:
        for cr in result.cases:
            head += ["", *_case_section(cr, result.dry_run)]
    text = "\n".join(head) + "\n"
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def single_runs(result) -> dict:
    """How the fine interval (the simulator's, as predicted here) holds single lab runs, alone
    and with the default model-error margin, and the margin these runs call for
    (``evaluate/margin.py``); {} without measured fine points that are checks."""
    runs = [(x, p.predicted, p.low, p.high) for cr in result.cases for p in cr.points
            if p.model == "fine" and not p.fitted and p.low is not None and p.predicted > 0
            for x in cr.measured_runs.get(p.workers, [])]
    if not runs:
        return {}
    margin = conformal_margin(run_score(*r) for r in runs)
    return {"runs": len(runs), "inside": coverage(runs, 0.0), "default_margin_rel": MODEL_ERROR_REL,
            "inside_with_default_margin": coverage(runs, MODEL_ERROR_REL),
            "fitted_margin_rel": margin if math.isfinite(margin) else None}


def _runs_text(s: dict) -> list[str]:
    if not s:
        return []
    fitted = s["fitted_margin_rel"]
    return ["", f"Single lab runs inside the fine interval: {s['inside']:.0%} of {s['runs']} "
            f"without a model-error margin, {s['inside_with_default_margin']:.0%} with the default "
            f"(±{s['default_margin_rel']:.1%}, added in quadrature). "
            + (f"The margin these runs call for (95 %, split conformal): ±{fitted:.1%}; a hardware "
               f"file's `model_error_rel` or `--model-error` sets it." if fitted is not None else
               "Too few runs to fit a margin of 95 % (19 or more are needed).")]


def _stats_table(groups, case_column: bool) -> list[str]:
    """``groups``: [(case name or None, {model: stats})]."""
    cols = (["case"] if case_column else []) + ["model", "points", "mean abs error", "max abs error",
                                                "signed mean error", "too high",
                                                "95 % interval holds the measurement"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) - 6) + "---:|" * 6]
    for name, stats in groups:
        for model, s in stats.items():
            cov = s.get("interval_coverage")
            cells = ([name] if case_column else []) + [
                model, str(s["points"]), f"{s['mean_abs_error_pct']:.1f} %", f"{s['max_abs_error_pct']:.1f} %",
                signed(s["signed_mean_error_pct"]), f"{s['too_high']} of {s['points']}",
                "-" if cov is None else f"{cov:.0%}"]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _by_workers_section(points) -> list[str]:
    by_w = bias_by_workers(checks(points))
    if not by_w:
        return []
    return ["## Error by W", "",
            "Per worker count over all cases: signed mean error / mean |error| (points). A sign "
            "that stays the same as W grows is a bias of the model, not noise.", "",
            *by_workers_table(by_w), "", f"![error by W](plots/{BIAS_PLOT}.png)"]


def _case_section(cr, dry_run: bool) -> list[str]:
    c: Case = cr.case
    models = list(dict.fromkeys(p.model for p in cr.points))
    lines = [f"## {c.name}", "", c.describe() + ".", "", f"![{c.name}](plots/{c.name}.png)", ""]
    cols = ["workers"] + ([] if dry_run else ["measured"]) + models
    lines += ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for w in c.workers:
        cells = [str(w)] + ([] if dry_run else [_fmt(cr.measured.get(w))])
        for m in models:
            p = next((p for p in cr.points if p.workers == w and p.model == m), None)
            cells.append(_cell(p))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Throughput in examples/s" + ("" if dry_run else "; prediction error in brackets") + "."]
    if cr.calibration and "pilot" in cr.calibration:
        k = cr.calibration
        lines += ["", f"Calibrated on the measured pilot at {', '.join(map(str, k['workers']))} "
                      f"workers (not held-out checks): receiver CPU "
                      f"{k['parse_alpha_s_per_byte'] * 1e9:.3g} ns/byte, goodput "
                      f"{k['bandwidth_bps'] / 1e6:.1f} Mbit/s (±{1.96 * k['sd_log_bandwidth']:.1%})."]
    elif cr.calibration:
        k = cr.calibration
        lines += ["", f"Calibrated on the measured {k['workers']}-worker point (not a held-out check): "
                      f"receiver CPU {k['parse_alpha_s_per_byte'] * 1e9:.3g} ns/byte, bandwidth "
                      f"{k['bandwidth_bps'] / 1e6:.1f} Mbit/s; its step {k['measured_step_s'] * 1e3:.0f} ms "
                      f"was predicted as {k['predicted_step_s_before'] * 1e3:.0f} ms before."]
    if cr.skipped:
        lines += ["", "Skipped: " + "; ".join(cr.skipped) + "."]
    return lines


def _cell(p) -> str:
    if p is None:
        return "-"
    err = p.error_pct
    return _fmt(p.predicted) + ("" if err is None else f" ({err:+.1f} %" + (", fit)" if p.fitted else ")"))


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def write_bias_plot(result, outdir: str) -> None:
    """plots/bias_by_workers.png: the checks' signed error against W (empty in a dry run)."""
    from .plot import plot_bias

    path = os.path.join(outdir, "plots", f"{BIAS_PLOT}.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    plot_bias(checks(result.points), path, title=f"signed error by W: {result.grid.path}")


def write_all(result, outdir: str, case_plots: bool = True) -> None:
    """Every output of a run that ends (done or stopped): points.csv, a plot per case unless
    ``case_plots`` is false, the summary. The profiles were written when the cases were."""
    write_points(result, os.path.join(outdir, "points.csv"))
    for cr in result.cases if case_plots else ():
        write_plot(cr, os.path.join(outdir, "plots", f"{cr.case.name}.png"))
    write_summary(result, outdir)


def write_progress(result, outdir: str) -> None:
    """points.csv and summary.md/.json as they stand: written after every point, so whatever
    stops a run leaves what it measured (without plots, which take longer)."""
    write_points(result, os.path.join(outdir, "points.csv"))
    write_summary(result, outdir, bias_plot=False)


def write_summary(result, outdir: str, bias_plot: bool = True) -> str:
    """Write summary.md, summary.json and the plot of the error by W; return the markdown."""
    if bias_plot:
        write_bias_plot(result, outdir)
    text = summary_markdown(result)
    _write_text(os.path.join(outdir, "summary.md"), text)
    _write_text(os.path.join(outdir, "summary.json"), json.dumps(summary_dict(result), indent=1) + "\n")
    return text
