"""Issue 11 item 5: estimated step time against the measured step, zoo models, two batches each.

For every (model, batch):
* measured: the median plain training step of ``sgdsim profile`` (one torch thread), in
  ``--runs`` separate runs, the rounds interleaved over the cases (this machine's speed drifts
  by tens of percent over minutes: the range is reported, errors are against the median);
* "exact": ``sgdsim profile --estimate`` against a database holding the model's own calls
  (``sgdsim ops measure --model``): the ahead-of-time database case;
* "estimator": the same, with every typed call timed by estimators trained on the sampled grid
  only (the model's shapes are held out); untyped glue calls (views, copies) still come from
  the model database, as there is no grid for them; their share of the time is reported.

    python examples/ops/estimate_models.py --models-db M.sqlite --grid-db G.sqlite \
        --out docs/validation/ops/models [--models zoo:mlp,zoo:resnet50]

Writes models.csv, models.md and models.png under --out. Run on a quiet machine.
"""
from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np
import torch

from sgdsim.ops.collect import this_device
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import estimate_profile
from sgdsim.ops.optypes import OTHER_NAME
from sgdsim.profiler.api import profile_model

CASES = [("zoo:mlp", (32, 256)), ("zoo:small-cnn", (32, 128)),
         ("zoo:resnet50", (2, 4)), ("zoo:vit-base", (1, 2)),
         ("zoo:bert-base?seq_len=64", (2, 4)), ("zoo:gpt2?seq_len=64", (2, 4))]


class GridOnly:
    """Typed calls never hit (the estimators answer); untyped calls from the model database."""

    def __init__(self, models_db, grid_db):
        self.models, self.grid = models_db, grid_db

    def lookup(self, device, keys):
        hits = self.models.lookup(device, [k for k in keys if k[0] == OTHER_NAME])
        return {k: v for k, v in hits.items() if k[0] == OTHER_NAME}

    def load(self, **kw):
        return self.models.load(**kw)

    def load_estimators(self, device):
        return self.grid.load_estimators(device)


def step_of(profile) -> float:
    upd = sum(float(profile.durations_s[:, i].mean()) for i, op in enumerate(profile.ops)
              if op.id.startswith("upd:"))
    return profile.mean_compute_s() + upd


def measure_steps(steps: int, runs: int, cases) -> dict:
    """{(spec, batch): [plain step seconds, one per run]}; every case once per round."""
    out: dict = {}
    for _ in range(runs):
        for spec, batches in cases:
            for b in batches:
                real = profile_model(spec, b, steps=steps, warmup=2, threads=1).plain_step_s
                out.setdefault((spec, b), []).append(real)
                print(spec, b, f"{real * 1e3:.2f} ms", flush=True)
    return out


def run_case(spec, batch, models_db, grid_db, device, measured: list) -> dict:
    real = float(np.median(measured))
    exact = estimate_profile(spec, batch, models_db, device)
    est = estimate_profile(spec, batch, GridOnly(models_db, grid_db), device)
    info = est.extra["estimated"]
    return {"model": spec, "batch": batch, "measured_ms": real * 1e3,
            "measured_min_ms": min(measured) * 1e3, "measured_max_ms": max(measured) * 1e3,
            "exact_ms": step_of(exact) * 1e3, "estimator_ms": step_of(est) * 1e3,
            "untyped_share": info["time_fraction_measured"] + info["time_fraction_fallback"]}


def render(rows, seconds) -> str:
    lines = ["| model | batch | measured step ms, median (range) | exact (database) ms | error | "
             "estimator ms | error | untyped share |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e1 = r["exact_ms"] / r["measured_ms"] - 1
        e2 = r["estimator_ms"] / r["measured_ms"] - 1
        lines.append(f"| {r['model']} | {r['batch']} | {r['measured_ms']:.2f} "
                     f"({r['measured_min_ms']:.2f}-{r['measured_max_ms']:.2f}) | "
                     f"{r['exact_ms']:.2f} | {e1:+.1%} | {r['estimator_ms']:.2f} | {e2:+.1%} | "
                     f"{r['untyped_share']:.1%} |")
    spread = max(r["measured_max_ms"] / r["measured_min_ms"] for r in rows)
    mean1 = sum(abs(r["exact_ms"] / r["measured_ms"] - 1) for r in rows) / len(rows)
    mean2 = sum(abs(r["estimator_ms"] / r["measured_ms"] - 1) for r in rows) / len(rows)
    lines += ["", f"Mean |error|: exact {mean1:.1%}, estimator {mean2:.1%} "
                  f"({len(rows)} cases, {seconds:.0f} s); the measured step itself varied up to "
                  f"{spread:.2f}x between runs."]
    return "\n".join(lines) + "\n"


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['model'].removeprefix('zoo:').split('?')[0]}\nb{r['batch']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4))
    for k, (key, name) in enumerate((("measured_ms", "measured"), ("exact_ms", "exact hits"),
                                     ("estimator_ms", "estimator"))):
        ax.bar([i + (k - 1) * 0.27 for i in x], [r[key] / r["measured_ms"] for r in rows], 0.27,
               label=name)
    ax.axhspan(0.9, 1.1, color="grey", alpha=0.15, label="±10 %")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("step time / measured")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-db", required=True)
    ap.add_argument("--grid-db", required=True)
    ap.add_argument("--out", required=True, help="folder for models.csv/.md/.png")
    ap.add_argument("--steps", type=int, default=6, help="measured steps per case and run")
    ap.add_argument("--runs", type=int, default=3, help="separate measurements of each case")
    ap.add_argument("--models", default=None,
                    help="comma-separated subset of the cases' models (default: all six)")
    args = ap.parse_args()
    wanted = None if args.models is None else set(args.models.split(","))
    cases = [c for c in CASES if wanted is None or c[0] in wanted]
    if not cases:
        raise SystemExit(f"--models: none of {sorted(wanted)} is a case ({[c[0] for c in CASES]})")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    device = this_device(1).name
    t0, rows = time.perf_counter(), []
    measured = measure_steps(args.steps, args.runs, cases)
    with open_db(args.models_db, create=False) as mdb, open_db(args.grid_db, create=False) as gdb:
        for spec, batches in cases:
            for b in batches:
                rows.append(run_case(spec, b, mdb, gdb, device, measured[(spec, b)]))
                print(rows[-1], flush=True)
    with open(os.path.join(args.out, "models.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    text = render(rows, time.perf_counter() - t0)
    with open(os.path.join(args.out, "models.md"), "w", encoding="utf-8") as fh:
        fh.write(text)
    plot(rows, os.path.join(args.out, "models.png"))
    print(text)


if __name__ == "__main__":
    main()
