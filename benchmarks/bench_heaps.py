"""Where the compiled core loses its time as workers are added (docs/benchmarks.md, "Where W = 64
loses its time"): simulated ops per second of one async PS run at each W, and, with
``--count``, the heap calls per op and the heaps' mean sizes when called (pure-Python path,
``SGDSIM_PURE_PYTHON=1``: the compiled core cannot be counted from Python).

    python benchmarks/bench_heaps.py --workers 1,16,64                      # ops/s, ResNet-50
    python benchmarks/bench_heaps.py --profile alexnet --workers 1,16,64    # a 68-op model
    SGDSIM_PURE_PYTHON=1 python benchmarks/bench_heaps.py --workers 1,64 --steps 3 --count

Instructions and cache misses per op come from running the same workload under valgrind's
callgrind with ``--cache-sim=yes`` (``--workers 64 --steps 12`` against ``--workers 1
--steps 768``: 467 k and 450 k ops, about the same work) and dividing its totals for the
``_core`` functions by the ops printed here (the core's count: its plan's ops, chains folded
into one, not the profile's).
"""
from __future__ import annotations

import argparse
import collections
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def counted() -> collections.Counter:
    """Wrap the heap insertions of the kernel, the flows and the ready queues; returns the
    counter they fill: (calls, summed size) per caller."""
    import sgdsim.sim.engine as engine
    import sgdsim.sim.flows as flows
    import sgdsim.sim.heap as heap
    import sgdsim.sim.kernel as kernel

    seen: collections.Counter = collections.Counter()

    def wrap(tag):
        def heap_set(H, h, item, key, seq):
            seen[tag, "calls"] += 1
            seen[tag, "size"] += int(H.size[h])
            return heap.heap_set(H, h, item, key, seq)
        return heap_set
    kernel.heap_set, flows.heap_set, engine.heap_set = wrap("timers"), wrap("flows"), wrap("queues")
    return seen


def counts(text: str) -> list[int]:
    try:
        workers = [int(w) for w in text.split(",")]
    except ValueError:
        workers = []
    if not workers or min(workers) < 1:
        raise argparse.ArgumentTypeError(f"worker counts such as 1,16,64, got {text!r}")
    return workers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "examples", "profiles")) if f.endswith(".json"))
    ap.add_argument("--profile", default="resnet50", choices=names, help="a bundled profile (default resnet50)")
    ap.add_argument("--workers", type=counts, default=[1, 16, 64], help="comma-separated worker counts")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per worker (default: about 3 M ops per run)")
    ap.add_argument("--count", action="store_true", help="heap calls per op and mean sizes (pure Python)")
    args = ap.parse_args()
    from sgdsim.compiled import HAVE_COMPILED
    from sgdsim.profile.io import load_profile
    from sgdsim.sim import SimConfig, WorkerClass, simulate
    from sgdsim.spec import Cluster, Control, Link, Strategy

    if args.count and HAVE_COMPILED:
        ap.error("--count needs the pure-Python path: SGDSIM_PURE_PYTHON=1")
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    prof = load_profile(os.path.join(ROOT, "examples", "profiles", f"{args.profile}.json"))
    net = Cluster(Link(10e9 / 8))  # 10 Gbit/s
    seen = counted() if args.count else None
    for W in args.workers:
        steps = args.steps or max(2, 3_000_000 // (prof.n_ops * W))
        cfg = SimConfig(Strategy(), net, Control(steps_per_worker=steps, warmup_steps=0))
        if seen is None:  # one untimed run first: the timed one finds its arrays' pages warm
            simulate([WorkerClass("w", prof, W)], cfg)
        else:
            seen.clear()
        t = time.perf_counter()
        r = simulate([WorkerClass("w", prof, W)], cfg)
        wall = time.perf_counter() - t
        line = f"W={W}: {r.ops_simulated:,} ops, {r.ops_simulated / wall / 1e6:.1f} M ops/s"
        if seen is not None:
            line += "".join(f"; {tag} {seen[tag, 'calls'] / r.ops_simulated:.2f} inserts/op, mean size "
                            f"{seen[tag, 'size'] / max(1, seen[tag, 'calls']):.1f}"
                            for tag in ("timers", "queues", "flows"))
        print(line)


if __name__ == "__main__":
    main()
