"""How the fine simulator's cost grows: wall time against workers (1 to 1,024) and against
steps simulated, for async PS, ring all-reduce and hierarchical all-reduce, the all-reduce
jobs' identical ranks simulated once (``sim/symmetry.py``) and, with per-rank noise, rank by
rank; and a large model's pipeline-parallel step (``llm/pipeline.py``: one pass per stage
and micro-batch) against its devices and its micro-batches (issue 36, item 5).

One replication per point, a fixed number of steps per worker, no warm-up, in this process
after one untimed call; ResNet-50. Prints a Markdown table and writes a plot
(docs/benchmarks-scaling.png, needs matplotlib); ``--write`` puts the table into
docs/benchmarks.md between the SCALING markers.

    python benchmarks/bench_scaling.py [--write]
"""
from __future__ import annotations

import os
import time

from docblock import machine, publish

import sgdsim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
PLOT = os.path.join(ROOT, "docs", "benchmarks-scaling.png")
WORKERS = (1, 4, 16, 64, 256, 1024)
JOBS = {
    "async PS, 10 Gbps": dict(arch="ps", mode="async", bandwidth="10Gbps"),
    "ring all-reduce, 10 Gbps": dict(arch="allreduce", mode="sync", bandwidth="10Gbps"),
    "hierarchical, 8 GPUs/node, 25 MB buckets": dict(
        arch="allreduce", mode="sync", collective="hierarchical", gpus_per_node=8,
        intra_bandwidth="150GB/s", bandwidth="100Gbps", bucket_size="25MB"),
    # ranks that differ (a noisy compute time each) are simulated rank by rank
    "ring all-reduce, 10 Gbps, --jitter 0.05": dict(arch="allreduce", mode="sync", bandwidth="10Gbps",
                                                    jitter=0.05),
}


def timed(prof, workers: int, steps: int, kw: dict) -> tuple[float, int]:
    t = time.perf_counter()
    [pt] = sgdsim.predict(prof, workers=[workers], replications=1, steps=steps, warmup=0, **kw)
    return time.perf_counter() - t, pt.ops_simulated


def main() -> None:
    prof = sgdsim.load_profile(PROFILE)
    for kw in JOBS.values():
        timed(prof, 8, 2, kw)
    lines = ["| job | W | steps per worker | ops simulated | wall (s) | ns per op |",
             "|---|---:|---:|---:|---:|---:|"]
    curves = {}
    for name, kw in JOBS.items():
        for W in WORKERS:
            if kw.get("gpus_per_node", 1) > W:
                continue
            wall, ops = timed(prof, W, 10, kw)
            curves.setdefault(name, []).append((W, wall))
            lines.append(f"| {name} | {W} | 10 | {ops:,} | {wall:.3f} | {wall / max(ops, 1) * 1e9:.0f} |")
    for steps in (10, 40, 160):  # against steps, at one W
        wall, ops = timed(prof, 64, steps, JOBS["async PS, 10 Gbps"])
        lines.append(f"| async PS, 10 Gbps | 64 | {steps} | {ops:,} | {wall:.3f} | {wall / ops * 1e9:.0f} |")
    lines += pipeline_rows(curves)
    lines += ["", f"One replication per point, in one process. Measured {time.strftime('%Y-%m-%d')} "
              f"({machine()}) with `python benchmarks/bench_scaling.py --write`."]
    publish(DOC, "SCALING", "\n".join(lines))
    _plot(curves)


PIPELINE = "gpt:layers=128,hidden=25600,heads=160,seq=2048,vocab=51200"  # README's example
PIPELINE_JOB = "pipeline 1F1B, tp=8, dp=4, 1 step"


def pipeline_rows(curves) -> list[str]:
    """One training step of a 128-layer transformer (A100s, tp = 8, dp = 4), its passes
    (forward and backward, per stage and micro-batch) counted as the simulated ops: against
    pp at 768 micro-batches, then against micro-batches at pp = 8."""
    from sgdsim.llm import device, parse_gpt, parse_layout, predict_step

    model, dev = parse_gpt(PIPELINE), device("a100-80gb")
    predict_step(model, parse_layout("tp=8,pp=2,mb=1,batch=64", workers=64), dev)  # warm
    rows = []
    for pp, batch in ((1, 3072), (2, 3072), (8, 3072), (32, 3072), (64, 3072), (8, 768), (8, 12288)):
        lay = parse_layout(f"tp=8,pp={pp},mb=1,batch={batch}", workers=8 * pp * 4)
        t = time.perf_counter()
        predict_step(model, lay, dev)
        wall = time.perf_counter() - t
        passes = 2 * pp * (batch // (lay.dp * lay.mb)) * lay.v
        if batch == 3072:
            curves.setdefault(PIPELINE_JOB, []).append((lay.gpus, wall))
        rows.append(f"| {PIPELINE_JOB}, {batch // (lay.dp * lay.mb)} micro-batches | {lay.gpus} | 1 "
                    f"| {passes:,} | {wall:.3f} | {wall / passes * 1e9:.0f} |")
    return rows


def _plot(curves) -> None:
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, pts in curves.items():
        ax.loglog(*zip(*pts), marker="o", label=name)
    ax.set_xlabel("workers (devices)")
    ax.set_ylabel("wall time (s): 10 steps per worker; pipeline: 1 step")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


if __name__ == "__main__":
    main()
