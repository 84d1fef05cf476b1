"""What if TensorFlow 1.x's gradient transfers did not overlap the backward pass (a what-if).

``published.py`` assumes every framework starts a gradient's transfer when the gradient is
ready, so the transfers overlap the rest of the backward pass. In TensorFlow 1.x a transfer
out of a GPU first waits for everything already queued on that GPU's compute stream: the NCCL
manager (``nccl_stream->stream->ThenWaitFor(p->tensor_stream)``, "Wait to ensure that the kernel
that produces the data in the input tensor has finished running") and the device-to-host copy
(``send_device_to_host_stream->ThenWaitFor(send_stream)``), both stream-wide waits, not waits
on the one kernel. How much of the backward pass is queued by then depends on how far
TensorFlow's executor runs ahead of the GPU, which no source gives: anything from full overlap
to none. This script predicts every TensorFlow row at the other end, none, with
``published.py --host-costs``'s setups, in three steps:

1. the TensorFlow rows' layers imported without overlap (`import pipedream --no-overlap`);
2. plus the ring NCCL 1.x built on the DGX-1 (``nccl1_ring.py``: one NVLink per direction at 2
   and 4 GPUs, the PCIe path at 8);
3. plus two GPUs behind each PCIe x16 uplink, for every one-node TensorFlow PS row (the
   DGX-1's four PCIe switches, public DGX-1 topology, not read here; a K80 board's two GPUs
   behind its on-board switch, as points.csv's intra_link says): G GPUs, in index order, push
   through ceil(G / 2) x 12 GB/s, not one 12 GB/s link (2026-12-01: until then the DGX-1's
   four at every G and the K80 hosts' one link).

Nothing else changes; the other sources keep their overlap. Prints the errors per step, and
the last two changes with the overlap kept.

    python examples/multigpu/tf_overlap.py      # ~25 s (the simulator on every row, five times)
"""
from __future__ import annotations

import csv
import os
import statistics
import sys

import nccl1_ring
import published

TF = [s for s in published.SETUPS if s.startswith("tfbench")]
DGX = "tfbench-dgx1-p100"
UPLINK_GB_S, GPUS_PER_UPLINK = 12, 2  # one PCIe 3 x16 uplink (the page's PCIe figure)
# (name, TensorFlow rows without overlap, NCCL 1.x's ring, two GPUs per x16 uplink)
STEPS = (("as published (overlap)", False, False, False),
         ("TensorFlow rows without overlap", True, False, False),
         ("+ NCCL 1.x's ring", True, True, False),
         ("+ two GPUs per PCIe x16 uplink", True, True, True),
         ("the ring and the uplinks, overlap kept", False, True, True))


def changes(row: dict, step: tuple) -> dict:
    """The setup changes of ``step`` for ``row``."""
    _, no_overlap, ring, per_uplink = step
    out: dict = {}
    if no_overlap and row["source_id"] in TF:
        out["overlap"] = False
    if ring and row["source_id"] == DGX and row["arch"] == "allreduce":
        out["intra"] = nccl1_ring.ring_hop_bandwidth(int(row["total_gpus"]))
    if per_uplink and "ps_link" in published.SETUPS[row["source_id"]] and row["arch"] == "ps":
        uplinks = -(-int(row["total_gpus"]) // GPUS_PER_UPLINK)
        out["ps_link"] = f"{UPLINK_GB_S * uplinks}GB/s"
    return out


def errors(rows: list[dict], step: tuple) -> list[tuple[dict, dict[str, float]]]:
    out = []
    for row in rows:
        with published.setup_changed(row["source_id"], **changes(row, step)):
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
        tf = [e["fine"] for r, e in res if r["source_id"] in TF]
        worst = sorted(res, key=lambda re: -abs(re[1]["fine"]))[:3]
        print(f"| {step[0]} | {summary([e['fine'] for _, e in res])} | {summary([e['coarse'] for _, e in res])} "
              f"| {stats(tf)} | "
              + "; ".join(f"{r['source_id']} {r['model']} b{r['batch_per_gpu']} {r['total_gpus']} GPUs "
                          f"{e['fine']:+.1f} %" for r, e in worst) + " |")


if __name__ == "__main__":
    main()
