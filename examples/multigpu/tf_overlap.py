"""What each of ``framework_rules.py``'s three rules changes on the published tables (an ablation).

``published.py`` predicts every row with the three rules about the 2017 TensorFlow tables:
its transfers start after the backward pass (``no_overlap``), NCCL 1.x's one ring on the
DGX-1 (``nccl1_ring``), two GPUs behind each PCIe x16 uplink (``pcie_uplinks``). This script
predicts every row with none of them, then adds them one by one, then drops each, with
``published.py --host-costs``'s setups: mean / max / signed error and the rows above 25 %,
for the simulator and the coarse model.

    python examples/multigpu/tf_overlap.py      # ~25 s (the simulator on every row, six times)
"""
from __future__ import annotations

import csv
import os
import statistics
import sys

import published
from framework_rules import TF_SOURCES, only

# (name, the rules on)
STEPS = (("no rule: every source overlaps, one 80 GB/s ring, one 12 GB/s PCIe link", ()),
         ("TensorFlow 1.x without overlap", ("no_overlap",)),
         ("+ NCCL 1.x's ring", ("no_overlap", "nccl1_ring")),
         ("+ two GPUs per PCIe x16 uplink: published.py's method", ("no_overlap", "nccl1_ring", "pcie_uplinks")),
         ("the method without the ring", ("no_overlap", "pcie_uplinks")),
         ("the method with TensorFlow's overlap kept", ("nccl1_ring", "pcie_uplinks")))


def errors(rows: list[dict], step: tuple) -> list[tuple[dict, dict[str, float]]]:
    out = []
    for row in rows:
        with only(*step[1]):
            pred = published.predict_row(row, fine=True, host=True)
        meas = float(row["throughput_examples_per_s"])
        out.append((row, {m: 100 * (x / meas - 1) for m, x in pred.items()}))
    return out


def stats(errs: list[float]) -> str:
    return (f"{statistics.mean(map(abs, errs)):.1f} % / {max(map(abs, errs)):.1f} % / "
            f"{statistics.mean(errs):+.1f} %")


def summary(errs: list[float]) -> str:
    """Mean / max / signed error, then the rows above 25 %."""
    return f"{stats(errs)} | {sum(abs(e) > 25 for e in errs)}"


def main() -> None:
    if sys.argv[1:]:  # it takes none: an argument is a mistake, not something to ignore
        print("usage: python examples/multigpu/tf_overlap.py (no arguments)", file=sys.stderr)
        raise SystemExit(2)
    path = os.path.join(published.ROOT, "docs", "validation", "multigpu", "points.csv")
    rows = [r for r in csv.DictReader(open(path, encoding="utf-8")) if r["model"] in published.GRAPHS]
    print("| step | fine: mean / max / signed | rows > 25 % | coarse: mean / max / signed | rows > 25 % "
          "| fine, TensorFlow rows | worst rows (fine) |\n|---|---|---:|---|---:|---|---|")
    for step in STEPS:
        res = errors(rows, step)
        tf = [e["fine"] for r, e in res if r["source_id"] in TF_SOURCES]
        worst = sorted(res, key=lambda re: -abs(re[1]["fine"]))[:3]
        print(f"| {step[0]} | {summary([e['fine'] for _, e in res])} | {summary([e['coarse'] for _, e in res])} "
              f"| {stats(tf)} | "
              + "; ".join(f"{r['source_id']} {r['model']} b{r['batch_per_gpu']} {r['total_gpus']} GPUs "
                          f"{e['fine']:+.1f} %" for r, e in worst) + " |")


if __name__ == "__main__":
    main()
