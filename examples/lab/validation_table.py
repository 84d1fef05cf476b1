"""One table over several validation runs: per case, fine and coarse mean / max |error| and how
often the fine interval holds the measurement (held-out points only; calibration fits left out);
then how many single lab runs fall inside it (the interval is meant for one run: ~95 %), without
and with the model-error margin ``sgdsim predict`` adds (points.csv holds the simulator's interval);
then the bias: per model its signed mean error and how many points it predicts too high, and the
same by worker count W (``sgdsim.evaluate.bias``). ``--plot FILE`` draws the signed error
against W (needs matplotlib), as ``sgdsim validate`` does in plots/bias_by_workers.png.

    python examples/lab/validation_table.py docs/validation/{async,cnn,allreduce,2ps,widecnn}/points.csv \
        --plot docs/validation/plots/bias_by_workers.png
"""
from __future__ import annotations

import argparse
import csv
from collections import defaultdict

from sgdsim.evaluate.margin import MODEL_ERROR_REL, coverage
from sgdsim.evaluate.bias import bias_by_model, bias_by_workers, by_workers_table, signed


def rows(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out += [r for r in csv.DictReader(f) if r["fitted"] != "1" and r["measured"]]
    return out


def table(points: list[dict]) -> str:
    by = defaultdict(lambda: defaultdict(list))
    for r in points:
        if r["model"] in ("fine", "coarse"):
            by[r["case"]][r["model"]].append(r)
    by["all"] = {m: [r for c in list(by.values()) for r in c.get(m, [])] for m in ("fine", "coarse")}
    lines = ["| case | points | fine mean / max | coarse mean / max | fine interval holds |",
             "|---|---:|---:|---:|---:|"]
    for case, models in by.items():
        fine = models.get("fine", [])
        held = sum(float(r["interval_low"]) <= float(r["measured"]) <= float(r["interval_high"])
                   for r in fine)
        lines.append(f"| {case} | {len(fine)} | {_stats(fine)} | {_stats(models.get('coarse', []))} "
                     f"| {held} of {len(fine)} |")
    fine = by["all"]["fine"]
    runs = [(float(x), *_interval(r)) for r in fine for x in r["measured_runs"].split(";")]
    inside = round(coverage(runs, 0.0) * len(runs)) if runs else 0
    lines.append(f"\nsingle runs inside the fine interval: {inside} of {len(runs)} "
                 f"({100 * inside / max(len(runs), 1):.0f} %)")
    if runs:  # how far out: each run's distance from the prediction in its side's half-widths
        k = sorted(_reach(*run) for run in runs)
        lines.append(f"a run's distance from the prediction, in half-widths of the interval: median "
                     f"{k[len(k) // 2]:.2f}, 95 % of runs within {k[min(len(k) - 1, int(0.95 * len(k)))]:.2f}")
        means = [(float(r["measured"]), *_interval(r)) for r in fine]
        lines.append(f"with predict's model-error margin (±{MODEL_ERROR_REL:.1%} in quadrature): "
                     f"{coverage(runs, MODEL_ERROR_REL) * len(runs):.0f} of {len(runs)} single runs "
                     f"inside, {coverage(means, MODEL_ERROR_REL) * len(means):.0f} of {len(means)} means")
    return "\n".join(lines)


def _interval(r: dict) -> tuple[float, float, float]:
    return float(r["predicted"]), float(r["interval_low"]), float(r["interval_high"])


def _reach(x: float, p: float, lo: float, hi: float) -> float:
    edge = hi if x >= p else lo
    return abs(x - p) / abs(edge - p) if edge != p else float("inf")


def _stats(rs: list[dict]) -> str:
    if not rs:
        return "-"
    errs = [abs(float(r["error_pct"])) for r in rs]
    return f"{sum(errs) / len(errs):.1f} % / {max(errs):.1f} %"


def _checks(points: list[dict]) -> list[tuple]:
    return [(r["model"], int(r["workers"]), float(r["measured"]), float(r["predicted"])) for r in points]


def bias_text(points: list[dict]) -> str:
    """Per model: signed mean error and points predicted too high; then the same by W."""
    checks = _checks(points)
    lines = ["| model | points | mean / max |error| | signed mean error | too high |",
             "|---|---:|---:|---:|---:|"]
    for m, b in bias_by_model(checks).items():
        lines.append(f"| {m} | {b.points} | {b.mean_abs_error_pct:.1f} % / {b.max_abs_error_pct:.1f} % "
                     f"| {signed(b.signed_mean_error_pct)} | {b.too_high} of {b.points} |")
    lines += ["", "error by W (signed mean / mean |error| (points); positive: predicted too high):", ""]
    return "\n".join(lines + by_workers_table(bias_by_workers(checks)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", metavar="POINTS.csv", help="points.csv files of sgdsim validate")
    ap.add_argument("--plot", metavar="FILE", help="draw the signed error against W into FILE (PNG)")
    args = ap.parse_args(argv)
    try:
        points = rows(args.paths)
    except OSError as exc:
        ap.error(f"{exc.filename}: {exc.strerror}")
    print(table(points))
    print()
    print(bias_text(points))
    if args.plot:
        from sgdsim.validate.plot import plot_bias

        plot_bias(_checks(points), args.plot, title="signed error by W (held-out points)")
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
