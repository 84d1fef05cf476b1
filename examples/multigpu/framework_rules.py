"""Three facts about the 2017 TensorFlow tables, each a rule applied to every row it concerns.

``published.py`` predicts every row from the same method; these rules say what that method
must know about TensorFlow 1.x (tf_cnn_benchmarks, 2017) and its hosts, each from a source,
none from a multi-GPU figure (``tf_overlap.py`` shows what each one changes):

- ``no_overlap``: **TensorFlow 1.x moves a gradient once the backward pass is (nearly) done.**
  A transfer out of a GPU waits for its compute stream as a whole, not for the kernel that made
  the gradient: the NCCL manager (``nccl_stream->stream->ThenWaitFor(p->tensor_stream)``) and the
  device-to-host copy (``send_device_to_host_stream->ThenWaitFor(send_stream)``). By the time
  the transfer is enqueued, the executor has enqueued most of the backward pass: "the
  Participant will call ThenWaitFor on the compute stream which will wait for all enqueued
  kernels instead of just the kernel that is producing the input tensor. This greatly affects
  mGPU perf" (ROCm/tensorflow-upstream#577, merged 2019-07; its ResNet-50 table: 8-GPU scaling
  efficiency 0.79 before the change, 0.94 after), upstreamed as tensorflow/tensorflow#31481
  ("most compute kernels are added to the compute stream prior to the NCCL sync Event,
  delaying the start of the collective"). The rows are predicted with `overlap=False`.
- ``nccl1_ring``: **NCCL 1.x's one ring on a DGX-1.** TensorFlow 1.x built its NCCL ops from
  NCCL 1.x, which orders one ring by NVML index (``src/core.cu``: ``orderRanks``); on the
  DGX-1's hybrid cube-mesh the ring 0-1-...-7-0 crosses 3 -> 4 and 7 -> 0, pairs with no
  NVLink. Its rate per direction is its slowest hop: one P100 NVLink (20 GB/s) at 2 and 4
  GPUs, the PCIe path (12 GB/s) at 8 (``nccl1_ring.py`` checks the rows one by one).
- ``pcie_uplinks``: **two GPUs behind each PCIe x16 uplink.** A host-memory parameter server is
  reached over PCIe; the DGX-1 puts each pair of GPUs behind one PCIe switch (NVIDIA DGX-1
  System Architecture white paper, WP-08437, its system diagram; not quoted here), and a K80
  board carries two GPUs behind its on-board switch (points.csv's ``intra_link``). G GPUs, used
  in index order, push through ceil(G / 2) x 12 GB/s, not one 12 GB/s link.

The other sources keep the overlap: PyTorch DDP launches a bucket's all-reduce from the
autograd hook that finds it ready. Horovod (NVIDIA's MXNet and TensorFlow tables) records its
ready event on the compute stream too, so the same wait may apply there; on those NVLink and
NVSwitch nodes the all-reduce is short, and importing those rows without overlap moves them
by at most 0.6 points (measured when this rule was written), so the choice does not matter.
"""
from __future__ import annotations

import contextlib

TF_SOURCES = ("tfbench-dgx1-p100", "tfbench-gce-k80", "tfbench-aws-k80", "tfbench-aws-k80-dist")
DGX1 = "tfbench-dgx1-p100"
RULES = ("no_overlap", "nccl1_ring", "pcie_uplinks")
ONE_NVLINK_P100, PCIE3_GB_S, GPUS_PER_UPLINK = "20GB/s", 12, 2

_active = set(RULES)


def dgx1_linked(a: int, b: int) -> bool:
    """One NVLink between GPUs a and b of a DGX-1 (P100) hybrid cube-mesh."""
    return a != b and (a // 4 == b // 4 or abs(a - b) == 4)


def ring_hop_bandwidth(gpus: int) -> str:
    """Per-direction bandwidth of NCCL 1.x's single ring over GPUs 0..gpus-1 in index order:
    its slowest hop."""
    hops = [(i, (i + 1) % gpus) for i in range(gpus)]
    return ONE_NVLINK_P100 if all(dgx1_linked(a, b) for a, b in hops) else f"{PCIE3_GB_S}GB/s"


def changes(row: dict, setup: dict) -> dict:
    """The setup values the active rules give ``row`` (whose source's setup is ``setup``)."""
    out: dict = {}
    src = row["source_id"]
    if "no_overlap" in _active and src in TF_SOURCES:
        out["overlap"] = False
    if "nccl1_ring" in _active and src == DGX1 and row["arch"] == "allreduce":
        out["intra"] = ring_hop_bandwidth(int(row["total_gpus"]))
    if "pcie_uplinks" in _active and "ps_link" in setup and row["arch"] == "ps":
        uplinks = -(-int(row["total_gpus"]) // GPUS_PER_UPLINK)
        out["ps_link"] = f"{PCIE3_GB_S * uplinks}GB/s"
    return out


@contextlib.contextmanager
def only(*names: str):
    """Only the rules ``names`` while the block runs (the ablation of ``tf_overlap.py``)."""
    unknown = set(names) - set(RULES)
    if unknown:
        raise ValueError(f"unknown rules {sorted(unknown)}; known: {', '.join(RULES)}")
    saved = set(_active)
    _active.clear()
    _active.update(names)
    try:
        yield
    finally:
        _active.clear()
        _active.update(saved)
