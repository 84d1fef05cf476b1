"""Simulator speed and memory: resnet50 example, async PS, W in {1, 4, 16, 64}.

Each W runs in a fresh subprocess (so peak RSS is per configuration) after one untimed
warm-up call that loads the compiled core. Prints a Markdown table; ``--write`` also puts it
into docs/benchmarks.md between the BENCH markers.

    python benchmarks/bench_sim.py [--write]
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time

from docblock import publish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
WORKERS = (1, 4, 16, 64)
TARGET_OPS = 3_000_000

CHILD = r"""
import json, resource, sys, time
from sgdsim.profile.io import load_profile
from sgdsim.sim import SimConfig, WorkerClass, simulate
from sgdsim.compiled import HAVE_COMPILED
from sgdsim.spec import Cluster, Control, Link, Strategy
W, steps, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
prof = load_profile(path)
net = Cluster(Link(10e9 / 8))  # 10 Gbit/s
simulate([WorkerClass("w", prof, 1)], SimConfig(Strategy(), net, Control(steps_per_worker=2, warmup_steps=0)))
cfg = SimConfig(Strategy(), net, Control(steps_per_worker=steps, warmup_steps=0))
t = time.perf_counter()
r = simulate([WorkerClass("w", prof, W)], cfg)
wall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"W": W, "ops": r.ops_simulated, "wall_s": wall, "rss_mb": rss,
                  "throughput": r.throughput, "compiled": HAVE_COMPILED}))
"""


def run_one(W: int) -> dict:
    n_ops = 673  # ops per resnet50 step; sizes the run to about TARGET_OPS
    steps = max(5, TARGET_OPS // (n_ops * W))
    out = subprocess.run([sys.executable, "-c", CHILD, str(W), str(steps), PROFILE],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


HEAPQ = r"""
import heapq, json, random, sys, time
n, W = int(sys.argv[1]), 64
rng = random.Random(1)
delay = [rng.random() for w in range(W)]
heap = [(delay[w], w) for w in range(W)]
heapq.heapify(heap)
t = time.perf_counter()
for _ in range(n):  # the least an event loop does: pop the earliest timer, schedule its next
    now, w = heapq.heappop(heap)
    heapq.heappush(heap, (now + delay[w], w))
print(json.dumps({"events_per_s": n / (time.perf_counter() - t)}))
"""


def heapq_baseline(n: int = 2_000_000) -> float:
    """Events/s of a minimal plain-Python heapq event loop, timed in the same run: the yardstick
    the compiled core is held against (issue 36 asks for 10x)."""
    out = subprocess.run([sys.executable, "-c", HEAPQ, str(n)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["events_per_s"]


def table(rows: list[dict], baseline: float) -> str:
    lines = ["| workers | ops simulated | wall (s) | ops/s | × heapq loop | peak RSS (MB) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rate = r['ops'] / r['wall_s']
        lines.append(f"| {r['W']} | {r['ops']:,} | {r['wall_s']:.2f} | {rate:,.0f} | {rate / baseline:.1f} "
                     f"| {r['rss_mb']:.0f} |")
    core = "compiled" if rows and rows[0]["compiled"] else "pure Python"
    lines.append("")
    lines.append(f"The plain-Python `heapq` event loop (pop a timer, push its next) ran {baseline:,.0f} "
                 "events/s in the same run.")
    lines.append("")
    lines.append(f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} "
                 f"({os.cpu_count()} cores, Python {platform.python_version()}, {core} core), one core "
                 f"per run, with `python benchmarks/bench_sim.py --write`.")
    return "\n".join(lines)


def main() -> None:
    rows = [run_one(W) for W in WORKERS]
    text = table(rows, heapq_baseline())
    publish(DOC, "BENCH", text)


if __name__ == "__main__":
    main()
