"""Tianshu's Table 2 on this machine: the sum of every operator's time against the real step.

For each model: the median plain training step (``sgdsim profile``'s reference, optimizer
included), the sum over the step's calls of the differential timer's forward + backward (plus
the optimizer's calls), the same sum with the naive timer (a clock around one call), and with
a hybrid (differential below 2 ms per call, alone above; not what ``sgdsim ops measure`` uses).
Also single operators, tiny and large, timed each way.

    python examples/ops/timing_table.py --out docs/validation/ops/timing.md

Run on a quiet machine (nothing else using the CPU); one torch thread throughout.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np
import torch

from sgdsim.ops.collect import call_dtype
from sgdsim.ops.graph import trace_model
from sgdsim.ops.measure import keep_memory, time_call, time_naive
from sgdsim.ops.optypes import REGISTRY, classify
from sgdsim.ops.records import params_key
from sgdsim.profiler.api import profile_model

MODELS = [("zoo:mlp", 32), ("zoo:small-cnn", 32), ("zoo:small-resnet", 16),
          ("zoo:resnet50?image_size=64", 8), ("zoo:gpt2?n_layer=2", 2)]
SINGLE = [("relu", {"numel": 64, "gi": 1}), ("eltwise", {"fn": "add", "numel": 64, "bcast": 0,
                                                          "gi": 1}),
          ("addmm", {"m": 8, "k": 16, "n": 16, "tb": 1, "ga": 1}),
          ("relu", {"numel": 4_000_000, "gi": 1}),
          ("conv2d", {"n": 8, "cin": 64, "h": 56, "w": 56, "cout": 64, "kh": 3, "kw": 3,
                      "sh": 1, "sw": 1, "ph": 1, "pw": 1, "groups": 1, "bias": 0, "gi": 1})]


def step_sums(spec: str, batch: int, rng) -> dict:
    step = trace_model(spec, batch)
    calls = list(step.calls) + [c for cs in step.update_calls().values() for c in cs]
    keys = [(*classify(c), call_dtype(c)) for c in calls]
    count = Counter((op, params_key(p), dt) for op, p, dt in keys)
    first = {}
    for call, (op, p, dt) in zip(calls, keys):
        first.setdefault((op, params_key(p), dt), call)
    sums = dict.fromkeys(TIMERS, 0.0)
    for key, call in first.items():
        for name, t in _three(call, rng).items():
            sums[name] += count[key] * t
    real = profile_model(spec, batch, steps=10, warmup=3, threads=1).plain_step_s
    return {"model": f"{spec} b{batch}", "calls": len(calls), "distinct": len(first),
            "real_ms": real * 1e3, **{f"{k}_ms": v * 1e3 for k, v in sums.items()}}


TIMERS = ("diff", "naive", "hybrid")
HYBRID_ABOVE_S = 0.002


def _three(call, rng) -> dict:
    """forward + backward seconds of one call by each timer."""
    timings = {"diff": time_call(call, rng), "naive": time_naive(call, rng),
               "hybrid": time_call(call, rng, naive_above_s=HYBRID_ABOVE_S)}
    return {k: t.fwd_s + t.bwd_s for k, t in timings.items()}


def single(name: str, params: dict, rng) -> dict:
    call = REGISTRY[name].build(params, "float32")
    return {"op": f"{name} {params_key(params)}",
            **{f"{k}_us": v * 1e6 for k, v in _three(call, rng).items()}}


def render(models: list[dict], ops: list[dict], seconds: float) -> str:
    lines = ["# Differential against naive operator timing (Tianshu Table 2, this machine)", "",
             f"`python examples/ops/timing_table.py` ({seconds:.0f} s, one torch thread, "
             f"torch {torch.__version__}, glibc's allocator settled as in a training step).", "",
             "| model | calls (distinct) | real step ms | differential sum ms | error | "
             "naive sum ms | error | hybrid sum ms | error |", "|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        cells = " | ".join(f"{m[f'{k}_ms']:.2f} | {m[f'{k}_ms'] / m['real_ms'] - 1:+.1%}" for k in TIMERS)
        lines.append(f"| {m['model']} | {m['calls']} ({m['distinct']}) | {m['real_ms']:.2f} | {cells} |")
    mean = {k: np.mean([abs(m[f"{k}_ms"] / m["real_ms"] - 1) for m in models]) for k in TIMERS}
    lines += ["", "Mean |error|: " + ", ".join(f"{k} {v:.1%}" for k, v in mean.items()) + ".",
              "", "| operator | differential µs (fwd+bwd) | naive µs | hybrid µs | naive / differential |",
              "|---|---|---|---|---|"]
    for o in ops:
        lines.append(f"| `{o['op']}` | {o['diff_us']:.1f} | {o['naive_us']:.1f} | {o['hybrid_us']:.1f} | "
                     f"{o['naive_us'] / o['diff_us']:.2f}× |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="markdown file (default: print)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    keep_memory()  # as sgdsim ops measure does: freed memory kept, not fresh mmaps
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    models = [step_sums(spec, b, rng) for spec, b in MODELS]
    ops = [single(name, p, rng) for name, p in SINGLE]
    text = render(models, ops, time.perf_counter() - t0)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
