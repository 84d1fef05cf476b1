"""Predict published multi-GPU measurements from their one-GPU figures (issue 12, part 5).

    python examples/multigpu/published.py [--out docs/validation/multigpu] [--fine] [--host-costs]

For every row of ``docs/validation/multigpu/points.csv`` whose model has a PipeDream per-layer
profile (``examples/pipedream/``): import the layers (parameter sizes, the split of compute
between layers), scale their compute so that the predicted one-GPU throughput equals the
source's own one-GPU figure, then predict the multi-GPU point on the published topology with
the assumptions of ``SETUPS`` below (every one is also written into the report). Writes
``results.csv`` and ``README.md`` (errors per source table) into ``--out``.
``--host-costs``: each setup's host CPU costs too (``host_costs.py``; outputs in
``docs/validation/multigpu/host-costs/``, with the errors before and after).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import os
import statistics
import sys
import time
from dataclasses import replace

import framework_rules
import host_costs
import sgdsim
from sgdsim.profile.pipedream import import_pipedream
from sgdsim.profile.transforms import without_overlap
from sgdsim.topology.local import with_local_aggregation
from sgdsim.topology.model import Topology
from sgdsim.units import parse_bandwidth_Bps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPHS = {"resnet50": "resnet50", "resnet101": "resnet101", "resnext50_32x4d": "resnext50",
          "resnext101_32x4d": "resnext101", "inception_v3": "inception_v3", "vgg16": "vgg16",
          "alexnet": "alexnet"}  # resnet152, resnext101_32x8d: no per-layer timings shared

NVLINK_V100, NVLINK_P100, NVSWITCH_A100, PCIE3 = "150GB/s", "80GB/s", "300GB/s", "12GB/s"

# Per source: how the job was distributed, as sgdsim options. Bandwidths are per direction.
SETUPS = {
    "pytorch-ddp-readme": dict(arch="allreduce", bucket="25MiB", intra=NVLINK_V100, nic="400Gbps"),
    "pytorch-ddp-readme-bucket1": dict(arch="allreduce", bucket="1MiB", intra=NVLINK_V100, nic="400Gbps"),
    "dle-pytorch": dict(arch="allreduce", bucket="25MiB", nic="200Gbps"),
    "dle-mxnet": dict(arch="allreduce", bucket="64MiB", nic="100Gbps"),
    "dle-tf": dict(arch="allreduce", bucket="64MiB", nic="100Gbps"),
    "tfbench-dgx1-p100": dict(ps_link=PCIE3, intra=NVLINK_P100),
    "tfbench-gce-k80": dict(ps_link=PCIE3, intra=PCIE3),
    "tfbench-aws-k80": dict(ps_link=PCIE3, intra=PCIE3),
    "tfbench-aws-k80-dist": dict(intra=PCIE3, nic="10Gbps"),
}
ASSUMPTIONS = [
    "Compute: the PipeDream layers' forward and backward times (a V100, PyTorch ~1.0), all scaled "
    "by one factor so that the predicted one-GPU throughput equals the source's one-GPU figure "
    "(same table, same batch and precision); no optimizer time of its own (it is inside the factor).",
    "Gradients: the PipeDream parameter sizes, 4 bytes per parameter whatever the precision "
    "(AMP keeps fp32 master gradients in DDP; Horovod's fp16 compression is not modelled).",
    "Overlap: PyTorch DDP and Horovod overlap communication with the backward pass, layer by "
    "layer; TensorFlow 1.x (tf_cnn_benchmarks, 2017) moves the gradients after the backward pass: "
    "its transfers wait for the GPU's whole compute stream, by then holding most of the backward "
    "pass (framework_rules.py; ROCm/tensorflow-upstream#577, tensorflow/tensorflow#31481).",
    "DDP: buckets of 25 MiB (1 MiB in the bucket-1 table), the first of 1 MiB, flat NCCL ring. "
    "Horovod: its 64 MiB fusion buffer modelled as buckets of 64 MiB.",
    "Intra-node bandwidth per device and direction: V100 NVLink (DGX-1, DGX-2) 150 GB/s "
    "(6 links x 25 GB/s), A100 NVSwitch 300 GB/s (12 x 25 GB/s), P100 NVLink 80 GB/s (4 x 20 "
    "GB/s), PCIe 3 x16 12 GB/s effective. TensorFlow 1.x's NCCL rows on the DGX-1: NCCL 1.x's one "
    "ring in index order, 20 GB/s (one NVLink) at 2 and 4 GPUs, 12 GB/s (a PCIe hop) at 8.",
    "Between nodes: 4 x 100 Gbit/s InfiniBand per DGX-1 (PyTorch README) as one 400 Gbit/s NIC; "
    "10 Gbit/s per p2.8xlarge (AWS).",
    "TensorFlow with parameters on the CPU (`parameter_server`, one node): every GPU is a worker "
    "of one PS whose links (both directions) are the host's PCIe, two GPUs per x16 uplink: "
    "ceil(G / 2) x 12 GB/s shared by the G GPUs; "
    "sync, hybrid sharing (the default). `replicated` without NCCL and NCCL all-reduce rows: a flat "
    "ring inside the node over PCIe or NVLink.",
    "TensorFlow distributed (`distributed_replicated`, AWS): nodes of 8 GPUs aggregate locally, "
    "then push to as many PS as nodes (sharded, one per node), sync; the PS links are 10 Gbit/s "
    "each (the co-located PS shares its node's NIC with that node's worker: not modelled).",
]


_FORCED: dict[str, dict] = {}  # setup_changed's values: over the source's setup and the rules


@contextlib.contextmanager
def setup_changed(source: str, **changes):
    """Every row of ``source`` with ``changes`` while the block runs, over its setup and the
    rules (the what-if checks of ``nccl1_ring.py``, ``pilot_check.py`` and ``tf_overlap.py``)."""
    saved = _FORCED.get(source)
    _FORCED[source] = {**(saved or {}), **changes}
    try:
        yield
    finally:
        if saved is None:
            del _FORCED[source]
        else:
            _FORCED[source] = saved


def setup_of(row: dict) -> dict:
    """The row's setup: its source's, then ``framework_rules`` (TensorFlow 1.x's facts), then
    any what-if of ``setup_changed``."""
    base = SETUPS[row["source_id"]]
    return {**base, **framework_rules.changes(row, base), **_FORCED.get(row["source_id"], {})}


def intra_for(row: dict, setup: dict) -> str:
    if "intra" in setup:
        return setup["intra"]
    return NVSWITCH_A100 if "A100" in row["gpu"] else NVLINK_V100


def options(row: dict) -> dict:
    """sgdsim.predict keyword arguments for a row (without workers and profile)."""
    setup = setup_of(row)
    G, nodes = int(row["gpus_per_node"]), int(row["nodes"])
    when = dict(overlap=setup.get("overlap", True))  # framework_rules: TensorFlow 1.x's transfers wait
    if row["arch"] == "allreduce":
        kw = dict(arch="allreduce", mode="sync", gpus_per_node=G, intra_bandwidth=intra_for(row, setup),
                  bandwidth=setup.get("nic", "100Gbps"), **when)
        if "bucket" in setup:
            kw["bucket_size"] = setup["bucket"]
        return kw
    if "ps_link" in setup:  # parameters on the host CPU: each GPU pushes over PCIe
        return dict(arch="ps", mode="sync", bandwidth=setup["ps_link"], ps_count=1, **when)
    return dict(arch="ps", mode="sync", gpus_per_node=G, intra_bandwidth=setup["intra"],
                bandwidth=setup["nic"], ps_count=nodes, **when)


def one_gpu_kw(kw: dict) -> dict:
    out = {k: v for k, v in kw.items() if k not in ("gpus_per_node", "intra_bandwidth")}
    if out.get("arch") == "ps":
        out["ps_count"] = 1
    return out


@functools.lru_cache(maxsize=None)
def layers(model: str, batch: int):
    """A model's PipeDream layers, read once per model and batch (rows share them); a row whose
    framework serialises its transfers says so with ``overlap=False`` (``options``)."""
    graph = os.path.join(ROOT, "examples", "pipedream", f"{GRAPHS[model]}.graph.txt")
    return import_pipedream(graph, batch, model_name=model)


def calibrated(row: dict, kw: dict, single: dict | None = None):
    """The layers, compute scaled until one GPU (``single``, else ``kw`` on one GPU) predicts
    the source's one-GPU figure."""
    prof = layers(row["model"], int(row["batch_per_gpu"]))
    target = float(row["one_gpu_throughput_examples_per_s"])
    single = one_gpu_kw(kw) if single is None else single
    for _ in range(30):  # the PS link's time does not scale: a fixed point, not one division
        got = sgdsim.predict(prof, workers=1, model="coarse", **single)[0].throughput
        if abs(got / target - 1) < 1e-6:
            break
        prof = replace(prof, durations_s=prof.durations_s * (got / target))
    return prof


def predict_row(row: dict, fine: bool, host: bool = False) -> dict:
    if host:
        return predict_host_row(row, fine)
    kw = options(row)
    return both_models(calibrated(row, kw), int(row["total_gpus"]), kw, fine)


def both_models(prof, workers: int, kw: dict, fine: bool) -> dict:
    out = {"coarse": sgdsim.predict(prof, workers=workers, model="coarse", **kw)[0].throughput}
    if fine:
        out["fine"] = sgdsim.predict(prof, workers=workers, model="fine", steps=5, warmup=2,
                                     replications=1, **kw)[0].throughput
    return out


def predict_host_row(row: dict, fine: bool) -> dict:
    """``--host-costs``: the row's setup (``host_costs.setup``) with its host CPU fields."""
    s = host_costs.setup(row)
    extra = host_costs.fields(s)
    if s["kind"] != "distributed":
        kw = {**options(row), **extra}
        return both_models(calibrated(row, kw), int(row["total_gpus"]), kw, fine)
    setup = setup_of(row)
    nodes, G, P = int(row["nodes"]), int(row["gpus_per_node"]), s["ps_count"]
    # one GPU of one instance: its own PS task, nothing crosses the NIC
    single = dict(arch="colocated", mode="sync", bandwidth=setup["nic"], overlap=setup.get("overlap", True),
                  **extra)
    if P < nodes:  # shards on P of the nodes: sharded PS, each node one worker of them
        kw = {**options(row), "ps_count": P, **extra}
        return both_models(calibrated(row, kw, single), int(row["total_gpus"]), kw, fine)
    prof = calibrated(row, single, single)
    if not single["overlap"]:  # the devices' transfers wait for their step, before the node sums them
        prof = without_overlap(prof)
    topo = Topology(parse_bandwidth_Bps(setup["nic"]), G, parse_bandwidth_Bps(setup["intra"]))
    node = with_local_aggregation(prof, topo)  # the node's 8 GPUs sum locally, then push
    return both_models(node, nodes, single, fine)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", default=os.path.join(ROOT, "docs", "validation", "multigpu", "points.csv"))
    ap.add_argument("--out", default=None, help="default: docs/validation/multigpu, or its "
                    "host-costs/ with --host-costs")
    ap.add_argument("--fine", action="store_true", help="also run the simulator (minutes)")
    ap.add_argument("--host-costs", action="store_true",
                    help="state each setup's host CPU costs (host_costs.py)")
    args = ap.parse_args()
    base = os.path.join(ROOT, "docs", "validation", "multigpu")
    args.out = args.out or (os.path.join(base, "host-costs") if args.host_costs else base)
    rows = list(csv.DictReader(open(args.points, encoding="utf-8")))
    results, skipped = [], {}
    t0 = time.time()
    for i, row in enumerate(rows):
        if row["model"] not in GRAPHS:
            skipped[row["model"]] = skipped.get(row["model"], 0) + 1
            continue
        pred = predict_row(row, args.fine, args.host_costs)
        meas = float(row["throughput_examples_per_s"])
        res = {k: row[k] for k in ("source_id", "model", "gpu", "precision", "batch_per_gpu",
                                   "gpus_per_node", "nodes", "total_gpus", "arch")}
        res.update(measured=meas, one_gpu=float(row["one_gpu_throughput_examples_per_s"]))
        for m, x in pred.items():
            res[f"{m}_pred"] = round(x, 2)
            res[f"{m}_err_pct"] = round(100 * (x / meas - 1), 2)
        results.append(res)
        print(f"[{i + 1}/{len(rows)}] {row['source_id']} {row['model']} {row['total_gpus']} GPUs: "
              f"measured {meas:g}, " + ", ".join(f"{m} {x:.0f}" for m, x in pred.items()),
              file=sys.stderr)
    extra = host_report(base, rows, results, args.fine) if args.host_costs else ""
    write(args.out, results, skipped, args.fine, time.time() - t0, extra,
          ASSUMPTIONS[:-1] if args.host_costs else ASSUMPTIONS)  # the last: distributed, replaced
    plot(args.out, results, "fine" if args.fine else "coarse")
    return 0


def plot(out: str, results: list[dict], model: str) -> None:
    """Predicted against measured scaling efficiency (throughput / (GPUs x one-GPU figure))."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for src in dict.fromkeys(r["source_id"] for r in results):
        rs = [r for r in results if r["source_id"] == src]
        eff = [(r["measured"] / (int(r["total_gpus"]) * r["one_gpu"]),
                r[f"{model}_pred"] / (int(r["total_gpus"]) * r["one_gpu"])) for r in rs]
        ax.scatter([m for m, _ in eff], [p for _, p in eff], s=18, label=src)
    ax.plot([0.6, 1.05], [0.6, 1.05], "k-", lw=0.8)
    for k in (0.9, 1.1):
        ax.plot([0.6, 1.05], [0.6 * k, 1.05 * k], "k:", lw=0.6)
    ax.set_xlim(0.6, 1.05)
    ax.set_ylim(0.6, 1.1)
    ax.set_xlabel("measured scaling efficiency")
    ax.set_ylabel(f"predicted scaling efficiency ({model})")
    ax.set_title("Published multi-GPU points (dotted: ±10 %)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "efficiency.png"), dpi=110)


def host_report(base: str, rows: list[dict], results: list[dict], fine: bool) -> str:
    """``--host-costs``: the setups, the rules, the errors before (``base``'s results.csv) and
    after, and the rows still above 25 %."""
    before = {(r["source_id"], r["model"], r["batch_per_gpu"], r["precision"], r["gpu"], r["total_gpus"]): r
              for r in csv.DictReader(open(os.path.join(base, "results.csv"), encoding="utf-8"))}
    keyed = [before[(r["source_id"], r["model"], r["batch_per_gpu"], r["precision"], r["gpu"], r["total_gpus"])]
             for r in results]
    models = ["coarse"] + (["fine"] if fine else [])
    worse = host_costs.above(results, models)
    used = [r for r in rows if r["model"] in GRAPHS]
    return ("\n\nBefore (`published.py`) -> after (`--host-costs`): mean |err| / max |err| / signed "
            "mean\n\n" + host_costs.compare(keyed, results, models)
            + "\n\nRows above 25 % after: " + ("none" if not worse else "\n\n" + "\n".join(f"- {w}" for w in worse))
            + "\n\nHost-cost rules:\n\n" + "\n".join(f"- {x}" for x in host_costs.RULES)
            + "\n\nSetups (sources.md) and their fields:\n\n"
            + "\n".join(f"- {x}" for x in host_costs.setup_lines(used)))


def write(out: str, results: list[dict], skipped: dict, fine: bool, wall_s: float, extra: str = "",
          assumptions: list[str] = ASSUMPTIONS) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)
    models = ["coarse"] + (["fine"] if fine else [])
    lines = ["| source | arch | points | " + " | ".join(
        f"{m} mean \\|err\\| | {m} max \\|err\\| | {m} mean err" for m in models) + " |",
             "|---|---|---:|" + "---:|---:|---:|" * len(models)]
    groups: dict[tuple, list] = {}
    for r in results:
        groups.setdefault((r["source_id"], r["arch"]), []).append(r)
    for (src, arch), rs in list(groups.items()) + [(("all", "-"), results)]:
        cells = []
        for m in models:
            errs = [r[f"{m}_err_pct"] for r in rs]
            cells += [f"{statistics.mean(abs(e) for e in errs):.1f}%", f"{max(abs(e) for e in errs):.1f}%",
                      f"{statistics.mean(errs):+.1f}%"]
        lines.append(f"| {src} | {arch} | {len(rs)} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    with open(os.path.join(out, "errors.md"), "w", encoding="utf-8") as f:
        f.write(table + "\n\nSkipped (no per-layer timings shared): "
                + ", ".join(f"{m} ({n} points)" for m, n in sorted(skipped.items()))
                + "." + extra + "\n\nAssumptions:\n\n" + "\n".join(f"- {a}" for a in assumptions)
                + f"\n\n`python examples/multigpu/published.py{' --fine' if fine else ''}"
                  f"{' --host-costs' if extra else ''}`, "
                  f"{wall_s:.0f} s, {time.strftime('%Y-%m-%d')}.\n")
    print(table)


if __name__ == "__main__":
    raise SystemExit(main())
