"""Issue 11 item 5: estimated step time against the measured step, zoo models, two batches each.

For every (model, batch):
* measured: the median plain training step of ``sgdsim profile`` (one torch thread), in
  ``--runs`` separate runs, the rounds interleaved over the cases (this machine's speed drifts
  by tens of percent over minutes: the range is reported, errors are against the median);
* "exact": ``sgdsim profile --estimate`` against a database holding the model's own calls
  (``sgdsim ops measure --model``): the ahead-of-time database case;
* "estimator": the same, with every typed call timed by estimators trained on the sampled grid
  only (the model's shapes are held out); untyped glue calls (views, copies) still come from
  the model database, as there is no grid for them; their share of the time is reported;
* "scaled": the estimator's step times the device's step factor from the model database's
  timed steps (``ops measure --model`` times them), the model's own left out: a factor it is
  not among (``sgdsim.ops.step_factor``);
* "over the reference" (unless ``--no-reference``): each type's reference call (``ops
  measure``'s, ``sgdsim.ops.reference``) is timed before and after every measured step, and
  the step is read at each database's mean speed, type by type, weighted by the type's share
  of the step (``reference.speed_factor``): the exact sum against the step read at the model
  database's mean speed, the estimator against it read at the grid's. The database's rows
  are read at that speed too, so this compares like with like when the machine's phase
  during the steps differs from the phases its rows were timed in.

    python examples/ops/estimate_models.py --models-db M.sqlite --grid-db G.sqlite \
        --out docs/validation/ops/models [--models zoo:mlp,zoo:resnet50] [--autocast bfloat16]

With ``--autocast``, mixed precision: the steps measured and estimated under torch.autocast,
the models' database from ``ops measure --model M --autocast ...`` (its steps timed under
autocast: the step factor's), the estimator column pricing the casts by their rule
(``estimate._casts``) rather than by the database, and a column of the casts' estimated over
measured sum; no reference (the references are float32's).

Writes models.csv, models.md and models.png under --out. Run on a quiet machine.
"""
from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np
import torch

from run_main import run_main  # beside this script
from sgdsim.ops import reference
from sgdsim.ops.collect import this_device
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import estimate_profile, load_estimators, time_calls
from sgdsim.ops.graph import trace_model
from sgdsim.ops.optypes import OTHER_NAME
from sgdsim.ops.records import params_from_key
from sgdsim.ops.roofline import CAST
from sgdsim.ops.step_factor import device_factor, precision_key, profile_step_s as step_of
from sgdsim.profiler.api import profile_model
from sgdsim.profiler.precision import AUTOCAST

REF_SAMPLES = 5  # reference samples per type before and after each measured step

CASES = [("zoo:mlp", (32, 256)), ("zoo:small-cnn", (32, 128)),
         ("zoo:resnet50", (2, 4)), ("zoo:vit-base", (1, 2)),
         ("zoo:bert-base?seq_len=64", (2, 4)), ("zoo:gpt2?seq_len=64", (2, 4))]


class GridOnly:
    """Typed calls never hit (the estimators answer); untyped calls from the model database."""

    def __init__(self, models_db, grid_db, casts: bool = True):
        self.models, self.grid, self.casts = models_db, grid_db, casts

    def lookup(self, device, keys):
        """``casts`` False: autocast's casts are not hits either (their rule prices them)."""
        wanted = {k for k in keys if k[0] == OTHER_NAME
                  and (self.casts or params_from_key(k[1]).get("fn") != CAST)}
        hits = self.models.lookup(device, wanted)
        return {k: v for k, v in hits.items() if k in wanted}

    def load(self, **kw):
        return self.models.load(**kw)

    def devices(self):
        return self.models.devices()

    def load_estimators(self, device):
        return self.grid.load_estimators(device)


def type_shares(spec, batch, models_db, device, autocast=None) -> dict[str, float]:
    """Each typed operator's share of the step's time, from the model's own calls."""
    timed = time_calls(trace_model(spec, batch, autocast).calls, models_db, device, {})
    t = timed.fwd + timed.bwd
    total = float(t.sum())
    shares: dict[str, float] = {}
    for x, op in zip(t, timed.ops):
        if op != OTHER_NAME:
            shares[op] = shares.get(op, 0.0) + float(x) / total
    return shares


def _now(refs: dict) -> dict[str, list[float]]:
    """``REF_SAMPLES`` of each type's reference, the types in turn: in ``ops measure`` a
    reference follows other calls, and back to back a memory-bound one runs from a warm cache
    (relu's: 51-91 µs alone against 113-175 µs in turn and 122-151 µs in ops measure)."""
    out: dict[str, list[float]] = {op: [] for op in refs}
    for _ in range(REF_SAMPLES):
        for op, r in refs.items():
            out[op].append(r.sample())
    return out


def measure_steps(steps: int, runs: int, cases, refs: dict, keep_memory: bool = False,
                  autocast=None) -> dict:
    """{(spec, batch): [(plain step seconds, {op: reference seconds}, (bytes faulted in, kernel
    seconds) per plain step), one per run]}; every case once per round; ``refs``: {op:
    Reference} timed around each step (may be empty); ``keep_memory``: glibc keeps freed memory
    (``profiler.memory``), for the whole process."""
    out: dict = {}
    for _ in range(runs):
        for spec, batches in cases:
            for b in batches:
                before = _now(refs)
                run = profile_model(spec, b, steps=steps, warmup=2, threads=1,
                                    keep_memory=keep_memory, autocast=autocast)
                after = _now(refs)
                now = {op: float(np.median(before[op] + after[op])) for op in refs}
                notes = run.profile.extra["profiler"]
                os_use = (notes["plain_faulted_bytes"], notes["plain_kernel_s"])
                out.setdefault((spec, b), []).append((run.plain_step_s, now, os_use))
                print(spec, b, f"{run.plain_step_s * 1e3:.2f} ms, {os_use[0] / 1e6:.0f} MB "
                      f"faulted in, {os_use[1] * 1e3:.0f} ms in the kernel", flush=True)
    return out


def mean_refs(db, device: str) -> dict[str, float]:
    """{op: the mean forward reference over the type's float32 rows} of ``db`` on ``device``."""
    return {op: f for (_, op, dt), (f, _) in
            reference.means(db.load(device=device, raw=True)).items() if dt == "float32"}


def steady_ms(measured: list, shares: dict, means: dict[str, float]) -> float:
    """The median measured step read at the mean reference speed ``means`` (as timed if no refs)."""
    return float(np.median([t * reference.speed_factor(shares, means, now)
                            for t, now, _ in measured])) * 1e3


def cast_ratio(spec, batch, models_db, grid_db, device, autocast) -> float:
    """The casts' sum by their rule over their sum measured exactly (NaN without autocast)."""
    if not autocast:
        return float("nan")
    casts = [c for c in trace_model(spec, batch, autocast).calls if c.func == CAST]
    exact = time_calls(casts, models_db, device, {})
    rule = time_calls(casts, GridOnly(models_db, grid_db, casts=False), device,
                      load_estimators(grid_db, device))
    return float((rule.fwd + rule.bwd).sum() / (exact.fwd + exact.bwd).sum())


def run_case(spec, batch, models_db, grid_db, device, measured: list, shares: dict,
             means: tuple[dict, dict], autocast=None) -> dict:
    steps = [m[0] for m in measured]
    real = float(np.median(steps))
    faulted = float(np.median([m[2][0] for m in measured]))
    kernel = float(np.median([m[2][1] / m[0] for m in measured]))
    exact = estimate_profile(spec, batch, models_db, device, step_factor=False, autocast=autocast)
    est = estimate_profile(spec, batch, GridOnly(models_db, grid_db, casts=not autocast), device,
                           step_factor=False, autocast=autocast)
    info = est.extra["estimated"]
    factor = device_factor(models_db, device, precision_key("float32", autocast), leave_out=spec)
    return {"model": spec, "batch": batch, "measured_ms": real * 1e3,
            "measured_min_ms": min(steps) * 1e3, "measured_max_ms": max(steps) * 1e3,
            "exact_ms": step_of(exact) * 1e3, "estimator_ms": step_of(est) * 1e3,
            "factor": factor.factor if factor else float("nan"),
            "scaled_ms": step_of(est) * 1e3 * (factor.factor if factor else float("nan")),
            "untyped_share": info["time_fraction_measured"] + info["time_fraction_fallback"],
            "steady_models_ms": steady_ms(measured, shares, means[0]),
            "steady_grid_ms": steady_ms(measured, shares, means[1]),
            "faulted_MB": faulted / 1e6, "kernel_share": kernel,
            "casts_rule_over_measured": cast_ratio(spec, batch, models_db, grid_db, device, autocast)}


def render(rows, seconds) -> str:
    lines = ["| model | batch | measured step ms, median (range) | exact (database) ms | error | "
             "estimator ms | error | scaled by the other models' step factor | error | untyped share | "
             "over the reference: exact | estimator | kernel share of the step (MB faulted in) | "
             "casts: rule / measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e1 = r["exact_ms"] / r["measured_ms"] - 1
        e2 = r["estimator_ms"] / r["measured_ms"] - 1
        s1 = r["exact_ms"] / r["steady_models_ms"] - 1
        s2 = r["estimator_ms"] / r["steady_grid_ms"] - 1
        lines.append(f"| {r['model']} | {r['batch']} | {r['measured_ms']:.2f} "
                     f"({r['measured_min_ms']:.2f}-{r['measured_max_ms']:.2f}) | "
                     f"{r['exact_ms']:.2f} | {e1:+.1%} | {r['estimator_ms']:.2f} | {e2:+.1%} | "
                     f"{r['factor']:.3f}: {r['scaled_ms']:.2f} | {r['scaled_ms'] / r['measured_ms'] - 1:+.1%} | "
                     f"{r['untyped_share']:.1%} | {s1:+.1%} | {s2:+.1%} | "
                     f"{r['kernel_share']:.0%} ({r['faulted_MB']:.0f}) | "
                     f"{r['casts_rule_over_measured']:.2f} |")
    spread = max(r["measured_max_ms"] / r["measured_min_ms"] for r in rows)

    def mean(num, den):
        return sum(abs(r[num] / r[den] - 1) for r in rows) / len(rows)
    lines += ["", f"Mean |error|: exact {mean('exact_ms', 'measured_ms'):.1%}, estimator "
                  f"{mean('estimator_ms', 'measured_ms'):.1%}, scaled {mean('scaled_ms', 'measured_ms'):.1%}"
                  f"; over the reference: exact "
                  f"{mean('exact_ms', 'steady_models_ms'):.1%}, estimator "
                  f"{mean('estimator_ms', 'steady_grid_ms'):.1%} "
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
    ap.add_argument("--keep-memory", action="store_true",
                    help="glibc keeps freed memory while the steps run (sgdsim profile --keep-memory)")
    ap.add_argument("--no-reference", action="store_true",
                    help="do not time the types' reference calls around the steps")
    ap.add_argument("--autocast", choices=AUTOCAST, default=None,
                    help="mixed precision (implies --no-reference: the references are float32's)")
    args = ap.parse_args()
    args.no_reference = args.no_reference or args.autocast is not None
    wanted = None if args.models is None else set(args.models.split(","))
    cases = [c for c in CASES if wanted is None or c[0] in wanted]
    if not cases:
        raise SystemExit(f"--models: none of {sorted(wanted)} is a case ({[c[0] for c in CASES]})")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    device = this_device(1).name
    t0, rows = time.perf_counter(), []
    with open_db(args.models_db, create=False) as mdb, open_db(args.grid_db, create=False) as gdb:
        shares = {(spec, b): type_shares(spec, b, mdb, device, args.autocast)
                  for spec, batches in cases for b in batches}
        refs = {} if args.no_reference else {
            op: reference.Reference(op, "float32") for op in sorted(set().union(*shares.values()))}
        measured = measure_steps(args.steps, args.runs, cases, refs, args.keep_memory, args.autocast)
        means = mean_refs(mdb, device), mean_refs(gdb, device)
        for spec, batches in cases:
            for b in batches:
                rows.append(run_case(spec, b, mdb, gdb, device, measured[(spec, b)],
                                     shares[(spec, b)], means, args.autocast))
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
    run_main(main)
