"""A model's calls timed two ways, and its step whole (docs/ops-runs.md, run 52).

``ops measure`` drops each forward copy's output at once, so the next copy writes the block
just freed, warm in the caches; a step's autograd keeps every activation until the backward,
each written to memory of its own. Here every call of each case is timed both ways, call by
call in alternating order (so the machine's phase falls on both alike); the kept rows take
the freed row's backward (the backward is the same timing either way). Then the case's step
is timed whole, as ``ops measure --model`` times it. Per case: the step against each sum of
calls; per type: the kept forwards over the freed.

    python examples/ops/kept_outputs.py OUT_DIR [--cases zoo:mlp:32,zoo:resnet50:2] [--seed 61]

OUT_DIR gets freed.sqlite and kept.sqlite (their steps tables hold the step beside each sum).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
from collections import defaultdict

import numpy as np

from model_calls import STEP_CASES  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError


def _cases(text: str | None) -> list[tuple[str, int]]:
    every = [(spec, b) for spec, batches in STEP_CASES for b in batches]
    if text is None:
        return every
    out = []
    for item in text.split(","):
        spec, _, batch = item.rpartition(":")
        if not batch.isdigit() or (spec, int(batch)) not in every:
            raise ConfigError(f"--cases: {item!r} is not one of {', '.join(f'{s}:{b}' for s, b in every)}")
        out.append((spec, int(batch)))
    return out


def _both(call, rng, flip: bool):
    from sgdsim.ops.measure import DEFAULT_PRECISION, time_call

    kept = lambda: time_call(call, rng, precision=DEFAULT_PRECISION, keep_outputs=True, backward=False)  # noqa: E731
    freed = lambda: time_call(call, rng, precision=DEFAULT_PRECISION)  # noqa: E731
    if flip:
        k = kept()
        return freed(), k
    f = freed()
    return f, kept()


def _records(device, name, params, dtype, f, k):
    from sgdsim.ops.collect import timed_record

    rec = timed_record(device, name, params, dtype, f)
    return rec, dataclasses.replace(rec, fwd_s=k.fwd_s, samples=k.samples, fwd_spread=k.fwd_spread,
                                    fwd_bound=k.fwd_bound)


def measure_case(spec, batch, dbs, device, rng, by_type, known: set) -> None:
    """Times the case's calls not in ``known`` (the keys measured for earlier cases), adding them."""
    from sgdsim.ops.collect import call_dtype, call_key, model_calls
    from sgdsim.progress import Progress

    todo = [c for c in model_calls(spec, batch) if call_key(c) not in known]
    with Progress(len(todo), f"{spec} batch {batch}: calls freed and kept") as bar:
        for i, (name, params, call) in enumerate(todo):
            f, k = _both(call, rng, flip=i % 2 == 1)
            freed, kept = _records(device, name, params, call_dtype(call), f, k)
            dbs[0].upsert([freed])
            dbs[1].upsert([kept])
            known.add(call_key((name, params, call)))
            if not (f.fwd_bound or k.fwd_bound):
                by_type[name][0] += f.fwd_s
                by_type[name][1] += k.fwd_s
            bar.advance()


def time_case(spec, batch, dbs, device) -> tuple[float, float, float]:
    from sgdsim.ops.estimate import estimate_profile
    from sgdsim.ops.step_factor import profile_step_s
    from sgdsim.ops.step_timing import STEPS, WARMUP, time_step
    from sgdsim.progress import Progress

    with Progress(WARMUP - 1 + STEPS, f"{spec} batch {batch}: its step") as bar:
        step_s, freed_s = time_step(spec, batch, dbs[0], device.name, 1, "cpu", bar.advance)
    kept_s = profile_step_s(estimate_profile(spec, batch, dbs[1], device.name, step_factor=False))
    for db, calls_s in zip(dbs, (freed_s, kept_s)):
        db.save_step(device.name, spec, batch, "float32", step_s, calls_s)
    return step_s, freed_s, kept_s


def main() -> None:
    ap = argparse.ArgumentParser(description="a model's calls timed with outputs freed and kept")
    ap.add_argument("out_dir")
    ap.add_argument("--cases", help="comma list of SPEC:BATCH (default: the eight step cases)")
    ap.add_argument("--seed", type=int, default=61)
    args = ap.parse_args()
    cases = _cases(args.cases)
    paths = [os.path.join(args.out_dir, f"{m}.sqlite") for m in ("freed", "kept")]
    if any(os.path.exists(p) for p in paths):
        raise ConfigError(f"refusing to overwrite {paths[0]} or {paths[1]}: name a new OUT_DIR")
    os.makedirs(args.out_dir, exist_ok=True)
    _run(cases, paths, np.random.default_rng(args.seed))


def _run(cases, paths, rng) -> None:
    from sgdsim.ops.collect import this_device
    from sgdsim.ops.db import open_db
    from sgdsim.ops.measure import keep_memory
    from sgdsim.ops.timing_env import timing_settings, torch_module

    torch = torch_module()
    keep_memory()
    by_type: dict = defaultdict(lambda: [0.0, 0.0])
    rows, known = [], set()
    with open_db(paths[0]) as freed, open_db(paths[1]) as kept, timing_settings(torch, 1):
        device = this_device(1)
        for spec, batch in cases:
            measure_case(spec, batch, (freed, kept), device, rng, by_type, known)
            step, f, k = time_case(spec, batch, (freed, kept), device)
            rows.append(f"| {spec} | {batch} | {step * 1e3:.1f} | {f * 1e3:.1f} | {step / f:.3f} | "
                        f"{k * 1e3:.1f} | {step / k:.3f} | {k / f:.3f} |")
    print(f"device: {device.name}\n")
    print("| model | batch | step (ms) | calls, outputs freed (ms) | step / freed | calls, outputs kept (ms) | step / kept | kept / freed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print("\n| type | forwards, freed (ms) | forwards, kept (ms) | kept / freed |\n|---|---:|---:|---:|")
    for name, (f, k) in sorted(by_type.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name} | {f * 1e3:.2f} | {k * 1e3:.2f} | {k / f:.3f} |" if f > 0 else f"| {name} | 0 | {k * 1e3:.2f} | - |")


if __name__ == "__main__":
    run_main(main)
