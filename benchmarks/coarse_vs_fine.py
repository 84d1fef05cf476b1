"""Coarse vs fine (and baselines) on the bundled --no-overlap and overlap profiles.

Writes docs/coarse-vs-fine.png and a Markdown table of the gap between the coarse model and
the simulator into docs/coarse.md (between the GAP markers). Needs matplotlib.

    python benchmarks/coarse_vs_fine.py
"""
from __future__ import annotations

import os
import re

import sgdsim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "coarse.md")
CASES = [("resnet50-nooverlap", "10Gbps"), ("vgg16-nooverlap", "10Gbps"),
         ("inception_v3-nooverlap", "1Gbps"), ("resnet50", "10Gbps")]
WORKERS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]


def run_case(name: str, bw: str) -> dict[str, list[float]]:
    path = os.path.join(ROOT, "examples", "profiles", f"{name}.json")
    out: dict[str, list[float]] = {}
    for p in sgdsim.predict(path, workers=WORKERS, bandwidth=bw, model="all", steps=60, warmup=20):
        out.setdefault(p.model, []).append(p.throughput)
    out["fine (fcfs)"] = [p.throughput for p in sgdsim.predict(
        path, workers=WORKERS, bandwidth=bw, sharing="fcfs", steps=60, warmup=20)]
    return out


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    axes = axes.ravel()
    rows = ["| profile | bandwidth | W | fine (ps) | fine (fcfs) | coarse | gap coarse vs fine (ps) |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for ax, (name, bw) in zip(axes, CASES):
        res = run_case(name, bw)
        for model, ys in res.items():
            style = "--" if model == "coarse" else "-"  # lin coincides with coarse without overlap
            ax.plot(WORKERS, ys, style, marker="o", ms=3, label=model, lw=2 if model == "coarse" else 1.2)
        ax.set_title(f"{name}, {bw}, async PS")
        ax.set_xlabel("workers")
        ax.set_ylabel("examples/s")
        ax.grid(alpha=0.3)
        for i, w in enumerate(WORKERS):
            if w in (1, 4, 8, 16, 32):
                f, ff, c = res["fine"][i], res["fine (fcfs)"][i], res["coarse"][i]
                rows.append(f"| {name} | {bw} | {w} | {f:.1f} | {ff:.1f} | {c:.1f} | {100 * (c - f) / f:+.1f} % |")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "docs", "coarse-vs-fine.png"), dpi=90)
    table = "\n".join(rows)
    print(table)
    doc = open(DOC, encoding="utf-8").read()
    doc = re.sub(r"(<!-- GAP -->\n).*?(\n<!-- /GAP -->)", lambda m: m.group(1) + table + m.group(2), doc, flags=re.S)
    open(DOC, "w", encoding="utf-8").write(doc)


if __name__ == "__main__":
    main()
