"""The published series calibrated from their smallest multi-GPU point, as ``calibrate --pilot``
would: does a bandwidth fitted there carry to the larger points?

For every series (source, arch, model, batch, precision, GPU) with two or more multi-GPU points,
with ``published.py --host-costs``'s setup: the bandwidths the job's collective or PS uses
(inside the node; the NIC keeps its figure) are scaled by one factor, bisected until the
smallest point is predicted exactly (1 where even the nominal figure predicts too little), and
the series' other points are predicted with it. Coarse model. Prints each point before and
after, and the summary over the points not used for the fit.

    python examples/multigpu/pilot_check.py      # ~10 s
"""
from __future__ import annotations

import csv
import os
import sys
import statistics
from collections import defaultdict

import published
from sgdsim.units import parse_bandwidth_Bps


def predict(row: dict, scale: float) -> float:
    """The row's coarse prediction with its node's bandwidths times ``scale``."""
    setup = published.setup_of(row)
    node = {k: setup[k] for k in ("intra", "ps_link") if k in setup}
    if row["arch"] == "allreduce" and "intra" not in setup:
        node["intra"] = published.intra_for(row, setup)
    scaled = {k: f"{parse_bandwidth_Bps(v) * scale:.6g}B/s" for k, v in node.items()}
    with published.setup_changed(row["source_id"], **scaled):
        return published.predict_row(row, fine=False, host=True)["coarse"]


def fitted_scale(pilot: dict) -> float:
    measured = float(pilot["throughput_examples_per_s"])
    if predict(pilot, 1.0) <= measured:
        return 1.0
    lo, hi = 1e-4, 1.0
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if predict(pilot, mid) < measured else (lo, mid)
    return (lo * hi) ** 0.5


def main() -> None:
    if sys.argv[1:]:  # it takes none: an argument is a mistake, not something to ignore
        print("usage: python examples/multigpu/pilot_check.py (no arguments)", file=sys.stderr)
        raise SystemExit(2)
    path = os.path.join(published.ROOT, "docs", "validation", "multigpu", "points.csv")
    series = defaultdict(list)
    for r in csv.DictReader(open(path, encoding="utf-8")):
        if r["model"] in published.GRAPHS:
            series[tuple(r[k] for k in ("source_id", "arch", "model", "batch_per_gpu", "precision",
                                        "gpu"))].append(r)
    before, after = [], []
    print("| source | model | batch | GPUs | bandwidth factor | before | after |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for key, rows in series.items():
        rows.sort(key=lambda r: int(r["total_gpus"]))
        if len(rows) < 2:
            continue
        scale = fitted_scale(rows[0])
        for r in rows[1:]:
            m = float(r["throughput_examples_per_s"])
            before.append(100 * (predict(r, 1.0) / m - 1))
            after.append(100 * (predict(r, scale) / m - 1))
            print(f"| {key[0]} | {key[2]} | {key[3]} | {r['total_gpus']} | {scale:.3g} | "
                  f"{before[-1]:+.1f} % | {after[-1]:+.1f} % |")
    for name, errs in (("before", before), ("after", after)):
        print(f"\n{name}: {len(errs)} points, mean |err| {statistics.mean(map(abs, errs)):.1f} %, "
              f"max {max(map(abs, errs)):.1f} %, signed {statistics.mean(errs):+.1f} %, "
              f"above 25 %: {sum(abs(e) > 25 for e in errs)}")


if __name__ == "__main__":
    main()
