"""The published tables' setups as sgdsim's host-cost fields (``published.py --host-costs``).

Each source's setup, as sources.md describes it (framework, where the variables live, what
moves the bytes, where the PS runs), is written once in ``setup(row)``; ``fields(setup)``
turns it into sgdsim keywords by one rule per kind of setup, with values from public hardware
facts or from ``sgdsim netbench --host-cpu`` run here (docs/validation/multigpu/host-costs/
netbench-host-cpu.json). Nothing here was chosen by looking at the multi-GPU numbers.

Rules (README.md in host-costs/ cites every value):

- NCCL (DDP, Horovod, tf_cnn_benchmarks ``replicated`` with NCCL) and tf_cnn_benchmarks'
  GPU-side reductions (``replicated`` without NCCL, ``parameter_server`` with
  ``local_parameter_device=gpu``): the GPUs reduce, DMA or RDMA moves the bytes: no host CPU
  per byte (``transport=rdma``, ``reduce_on=device``).
- Parameters in host memory (``parameter_server`` with ``local_parameter_device=cpu``, one
  node): the GPUs' DMA moves the bytes (no kernel TCP, ``transport=rdma``); the host sums
  and applies them in its memory: ``server_cpu`` = MEM_PASSES / the host's memory bandwidth
  per byte received or sent, one queue (the memory bus) for all workers.
- Distributed (``distributed_replicated``, gRPC over TCP, PS shards on the worker nodes): the
  kernel's TCP cost per byte at both ends (``tcp_cpu`` = TCP_CPU, measured here) and the
  shard's memory work as above; the stated number of PS shards; shards on every node:
  ``--arch colocated`` over nodes (each node sums its 8 GPUs first); fewer shards than nodes:
  ``--arch ps`` with that many shards (colocated cannot say which nodes hold none).
"""
from __future__ import annotations

import re

# Measured here: `sgdsim netbench --host-cpu` (2 cores, Python 3.11; netbench-host-cpu.json).
TCP_CPU = 1.5e-10     # s/B per end, 256 MB over loopback TCP (an upper bound of a NIC's kernel cost)
REDUCE_CPU = 1.2e-10  # s/B, float32 a += b on one core (cross-check of the memory rule below)
# a += b moves 3 bytes of memory per byte of a (read a, read b, write a): the host's work per
# byte a PS receives (sum into the gradient, then the update) or sends.
MEM_PASSES = 3
# Host memory bandwidth, Intel ARK "Max Memory Bandwidth": Xeon E5-2698 v4 (DGX-1: two) and
# E5-2686 v4 / E5 v4 class (one socket, AWS p2.8xlarge: 32 vCPUs = 16 cores; GCE
# n1-standard-32: 32 vCPUs) 76.8 GB/s per socket (4 channels DDR4-2400).
HOST_MEMORY_BPS = {"dgx1": 2 * 76.8e9, "p2.8xlarge": 76.8e9, "n1-standard-32": 76.8e9}
HOSTS = {"tfbench-dgx1-p100": "dgx1", "tfbench-gce-k80": "n1-standard-32",
         "tfbench-aws-k80": "p2.8xlarge", "tfbench-aws-k80-dist": "p2.8xlarge"}

# tf_cnn_benchmarks' variable_update / local_parameter_device per table and model (sources.md
# §2a-2d; the batch-32 "Other Results" assumed to use the same configuration).
TF_VARIABLES = {
    "tfbench-dgx1-p100": {"inception_v3": "ps-cpu", "resnet50": "ps-cpu", "resnet152": "ps-cpu",
                          "alexnet": "nccl", "vgg16": "nccl"},
    "tfbench-gce-k80": {m: "ps-cpu" for m in ("inception_v3", "resnet50", "resnet152", "alexnet", "vgg16")},
    "tfbench-aws-k80": {"inception_v3": "ps-cpu", "resnet50": "replicated-gpu", "resnet152": "replicated-gpu",
                        "alexnet": "ps-gpu", "vgg16": "ps-gpu"},
    "tfbench-aws-k80-dist": {m: "distributed" for m in ("inception_v3", "resnet50", "resnet152")},
}
FRAMEWORKS = {"pytorch-ddp-readme": "PyTorch DDP, NCCL", "pytorch-ddp-readme-bucket1": "PyTorch DDP, NCCL",
              "dle-pytorch": "PyTorch DDP, NCCL", "dle-mxnet": "MXNet + Horovod, NCCL",
              "dle-tf": "TensorFlow 1 + Horovod, NCCL"}
KINDS = {  # kind -> (what moves the bytes, where variables live, who reduces)
    "nccl": ("NCCL over NVLink/PCIe/InfiniBand", "device", "device"),
    "replicated-gpu": ("GPU copies over PCIe (DMA)", "device", "device"),
    "ps-gpu": ("GPU copies over PCIe (DMA)", "device", "device"),
    "ps-cpu": ("DMA over PCIe to host memory", "host", "host"),
    "distributed": ("gRPC over TCP (10 Gbit/s Ethernet)", "host", "host"),
}


def setup(row: dict) -> dict:
    """What sources.md says of this row's setup: framework, kind of update, host, PS shards."""
    src = row["source_id"]
    if src in FRAMEWORKS:
        kind, framework = "nccl", FRAMEWORKS[src]
    else:
        kind, framework = TF_VARIABLES[src][row["model"]], "TensorFlow 1.x tf_cnn_benchmarks"
    moves, variables, reduces = KINDS[kind]
    out = dict(source=src, framework=framework, kind=kind, moves=moves, variables=variables,
               reduces=reduces, host=HOSTS.get(src))
    if kind == "distributed":
        out.update(ps_count=stated_ps_count(row), ps_colocated=True)
    return out


def stated_ps_count(row: dict) -> int:
    """The number of PS tasks points.csv quotes for a distributed row ("N PS tasks")."""
    found = re.search(r"(\d+) PS tasks?", row["collective_or_ps_detail"])
    if not found:
        raise ValueError(f"no PS count in {row['collective_or_ps_detail']!r}")
    return int(found.group(1))


def server_cpu(host: str) -> float:
    """A host-memory PS's work per byte: MEM_PASSES bytes over the host's memory bandwidth."""
    return MEM_PASSES / HOST_MEMORY_BPS[host]


def fields(s: dict) -> dict:
    """sgdsim's host-cost keywords for a setup (one rule per kind, see the module)."""
    if s["variables"] == "device":  # a PS on a GPU applies the sums there: no reduction to place
        return dict(transport="rdma", **({} if s["kind"] == "ps-gpu" else {"reduce_on": "device"}))
    if s["kind"] == "ps-cpu":
        return dict(transport="rdma", server_cpu=server_cpu(s["host"]))
    return dict(transport="tcp", tcp_cpu=TCP_CPU, server_cpu=server_cpu(s["host"]))


def describe(s: dict) -> str:
    """One line for the report."""
    extra = ", PS shards on the worker nodes (the count each row states)" if "ps_count" in s else ""
    return (f"{s['framework']}: {s['moves']}; variables on the {s['variables']}, reduced on the "
            f"{s['reduces']}{extra}")


RULES = [
    "NCCL (DDP, Horovod, tf_cnn_benchmarks `replicated` with NCCL) and tf_cnn_benchmarks' GPU-side "
    "updates (`replicated` without NCCL, `parameter_server` with `local_parameter_device=gpu`): "
    "`transport=rdma`, `reduce_on=device` (the GPUs reduce; DMA/RDMA moves the bytes): no host CPU per byte.",
    "`parameter_server` with `local_parameter_device=cpu` (one node): `transport=rdma` (PCIe DMA, no "
    f"kernel TCP), `server_cpu` = {MEM_PASSES} B of memory traffic per byte / host memory bandwidth "
    f"(DGX-1 2 x 76.8 GB/s: {server_cpu('dgx1'):.2e} s/B; p2.8xlarge and n1-standard-32, one socket "
    f"76.8 GB/s: {server_cpu('p2.8xlarge'):.2e} s/B); one queue (the memory bus) for all GPUs.",
    f"`distributed_replicated` (gRPC over TCP): `transport=tcp`, `tcp_cpu` = {TCP_CPU:g} s/B per end "
    "(measured here), `server_cpu` as above; the PS count the page states; as many shards as nodes: "
    "`--arch colocated` over nodes, each node's 8 GPUs summed first over PCIe (12 GB/s); fewer: "
    "`--arch ps` with that many shards (per-node workers). One GPU: its own PS, nothing on the NIC.",
]


def _stats(errs: list[float]) -> str:
    return (f"{sum(abs(e) for e in errs) / len(errs):.1f}% / {max(abs(e) for e in errs):.1f}% / "
            f"{sum(errs) / len(errs):+.1f}%")


def compare(before: list[dict], after: list[dict], models: list[str]) -> str:
    """Per table: mean |err| / max |err| / signed mean, before -> after, for each model."""
    lines = ["| source | arch | points | " + " | ".join(f"{m} before | {m} after" for m in models) + " |",
             "|---|---|---:|" + "---|---|" * len(models)]
    keys = list(dict.fromkeys((r["source_id"], r["arch"]) for r in after)) + [("all", "-")]
    for src, arch in keys:
        pick = [(b, a) for b, a in zip(before, after)
                if src == "all" or (a["source_id"], a["arch"]) == (src, arch)]
        cells = [_stats([float(x[f"{m}_err_pct"]) for x in side]) for m in models
                 for side in ([b for b, _ in pick], [a for _, a in pick])]
        lines.append(f"| {src} | {arch} | {len(pick)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def above(results: list[dict], models: list[str], limit: float = 25.0) -> list[str]:
    """The rows whose |error| exceeds ``limit`` % for any model."""
    out = []
    for r in results:
        errs = {m: float(r[f"{m}_err_pct"]) for m in models}
        if any(abs(e) > limit for e in errs.values()):
            out.append(f"{r['source_id']} {r['model']} batch {r['batch_per_gpu']}, {r['total_gpus']} "
                       "GPUs: " + ", ".join(f"{m} {e:+.1f}%" for m, e in errs.items()))
    return out


def setup_lines(rows: list[dict]) -> list[str]:
    """Each source's (and kind's) setup as stated, with its fields."""
    seen: dict[tuple, str] = {}
    for row in rows:
        s = setup(row)
        f = ", ".join(f"{k}={v:.2e}" if isinstance(v, float) else f"{k}={v}" for k, v in fields(s).items())
        models = seen.get((s["source"], s["kind"]), ("", ""))[0]
        seen[(s["source"], s["kind"])] = (",".join(dict.fromkeys(filter(None, [*models.split(","), row["model"]]))),
                                          f"{describe(s)} -> {f}")
    return [f"`{src}` ({models}): {text}" for (src, _), (models, text) in seen.items()]
