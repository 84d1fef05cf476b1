"""Test-retest of the differential timer: the floor under any estimator's error.

Times again, in a shuffled order, every row of the chosen operator types that a database
already holds (same device), and compares the two measurements, as an estimator's error is
computed: |t2 / t1 - 1| per direction, plain mean, and weighted by time (what a step's sum
feels), overall and by size band. An estimator cannot be expected to beat this on held-out
shapes: it is the disagreement of the timer with itself minutes later.

    python examples/ops/retest.py --db G.sqlite --op relu,conv2d,addmm,layer_norm \
        --markdown docs/validation/ops/retest.md

Run on a quiet machine; one torch thread, as ``sgdsim ops measure``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from sgdsim.ops.collect import measure_calls, this_device
from sgdsim.ops.db import open_db
from sgdsim.ops.optypes import REGISTRY

BANDS = ((0.0, 20e-6, "< 20 µs"), (20e-6, 200e-6, "20-200 µs"), (200e-6, np.inf, "≥ 200 µs"))


def retest(db_path: str, ops: list[str], rng) -> dict[str, list[tuple[float, float]]]:
    device = this_device(1)
    with open_db(db_path, create=False) as db:
        first = [r for op in ops for r in db.load(device=device.name, op=op)]
    order = rng.permutation(len(first))
    todo = [(first[i].op, first[i].params, REGISTRY[first[i].op].build(first[i].params,
                                                                         first[i].dtype))
            for i in order]
    pairs: dict[str, list[tuple[float, float]]] = {op: [] for op in ops}
    for i, rec in zip(order, measure_calls(todo, device, rng)):
        old = first[i]
        pairs[old.op].append((old.fwd_s, rec.fwd_s))
        if old.bwd_s > 0 and rec.bwd_s > 0:
            pairs[old.op].append((old.bwd_s, rec.bwd_s))
    return pairs


def summary(pairs: list[tuple[float, float]]) -> dict:
    a = np.array(pairs)
    err = np.abs(a[:, 1] / a[:, 0] - 1)
    out = {"n": len(a), "mean": float(err.mean()), "median": float(np.median(err)),
           "weighted": float(np.abs(a[:, 1] - a[:, 0]).sum() / a[:, 0].sum())}
    for lo, hi, name in BANDS:
        m = (a[:, 0] >= lo) & (a[:, 0] < hi)
        out[name] = (float(err[m].mean()), int(m.sum())) if m.any() else (float("nan"), 0)
    return out


def render(result: dict[str, dict], seconds: float) -> str:
    head = " | ".join(name for _, _, name in BANDS)
    lines = [f"| operator | times compared | mean | median | time-weighted | {head} |",
             "|---|---|---|---|---|" + "---|" * len(BANDS)]
    for op, s in result.items():
        bands = " | ".join(f"{s[n][0]:.1%} ({s[n][1]})" for _, _, n in BANDS)
        lines.append(f"| {op} | {s['n']} | {s['mean']:.1%} | {s['median']:.1%} | "
                     f"{s['weighted']:.1%} | {bands} |")
    lines += ["", f"|t2/t1 - 1| over forward and backward times ({seconds:.0f} s)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--op", default="relu,conv2d,addmm,layer_norm")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)  # as sgdsim ops measure times
    t0 = time.perf_counter()
    ops = [o.strip() for o in args.op.split(",")]
    pairs = retest(args.db, ops, np.random.default_rng(args.seed))
    text = render({op: summary(p) for op, p in pairs.items() if p}, time.perf_counter() - t0)
    print(text)
    if args.markdown:
        with open(args.markdown, "x", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
