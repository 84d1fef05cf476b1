"""The DGX-1 P100 NCCL rows with and without the ring NCCL 1.x built (``framework_rules.py``).

TensorFlow 1.x built its NCCL ops from an NCCL 1.x source tree in 2017 (its workspace.bzl
pinned ``nccl_archive`` to commits of github.com/nvidia/nccl's 1.x line). NCCL 1.x builds
one ring, in the order of the devices' NVML indices (``src/core.cu``: ``orderRanks`` sorts by
``sortId``, "Order by nvml index"), and a neighbour it cannot reach peer-to-peer is reached
through zero-copy host memory. On a DGX-1 (hybrid cube-mesh: GPUs 0-3 and 4-7 each fully
connected by one NVLink per pair, GPU i linked to GPU i + 4), the ring 0-1-...-7-0 crosses
3 -> 4 and 7 -> 0, pairs with no NVLink, on different CPU sockets. So the ring's bandwidth per
direction is its slowest hop: one P100 NVLink (20 GB/s) at 2 and 4 GPUs, the PCIe path
(12 GB/s, the page's PCIe figure) at 8, instead of the 80 GB/s of four links.

Prints each row with the other rules of ``framework_rules.py`` and the 80 GB/s ring (before),
with the ring rule too (after, ``published.py``'s prediction), and the ring rate that would
fit the row exactly.

    python examples/multigpu/nccl1_ring.py      # a few seconds
"""
from __future__ import annotations

import csv
import os
import sys

import published
from framework_rules import RULES, only, ring_hop_bandwidth

WITHOUT_RING = tuple(r for r in RULES if r != "nccl1_ring")


def at(row: dict, intra: str) -> float:
    """The row's coarse prediction with the ring's per-direction bandwidth ``intra``."""
    with published.setup_changed(row["source_id"], intra=intra):
        return published.predict_row(row, fine=False, host=True)["coarse"]


def fitting_rate(row: dict, measured: float) -> float:
    """The ring bandwidth (B/s) at which the prediction equals the measurement (bisection in
    log between 0.1 and 80 GB/s)."""
    lo, hi = 1e8, 8e10
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if at(row, f"{mid:.6g}B/s") < measured else (lo, mid)
    return (lo * hi) ** 0.5


def main() -> None:
    if sys.argv[1:]:  # it takes none: an argument is a mistake, not something to ignore
        print("usage: python examples/multigpu/nccl1_ring.py (no arguments)", file=sys.stderr)
        raise SystemExit(2)
    rows = [r for r in csv.DictReader(open(os.path.join(published.ROOT, "docs", "validation",
                                                        "multigpu", "points.csv"), encoding="utf-8"))
            if r["source_id"] == "tfbench-dgx1-p100" and r["arch"] == "allreduce"]
    print("| model | batch | GPUs | measured | ring (per direction) | before | after | ring rate that "
          "would fit |\n|---|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        gpus, meas = int(r["total_gpus"]), float(r["throughput_examples_per_s"])
        with only(*WITHOUT_RING):
            before = published.predict_row(r, fine=False, host=True)["coarse"]
        ring = ring_hop_bandwidth(gpus)
        after = published.predict_row(r, fine=False, host=True)["coarse"]
        fit = f"{fitting_rate(r, meas) / 1e9:.1f} GB/s" if after > meas else "-"
        print(f"| {r['model']} | {r['batch_per_gpu']} | {gpus} | {meas:g} | {ring} | "
              f"{100 * (before / meas - 1):+.1f} % | {100 * (after / meas - 1):+.1f} % | {fit} |")


if __name__ == "__main__":
    main()
