"""The lab's two trainer families (no torch needed to check a choice).

"lab": the project's own trainer (``ps.py``, ``worker.py``, ``allreduce.py``), which the models'
knobs were fitted on; "torch": PyTorch's textbook implementations (a PS over
``torch.distributed.rpc``, ``rpc_ps.py``, and DistributedDataParallel with its default 25 MB
buckets), held out from every fit.
"""
from __future__ import annotations

from ...errors import ConfigError
from ...units import format_size_bytes

TRAINERS = ("lab", "torch")
TORCH_DDP_BUCKET_MB = 25.0
LAB_DDP_BUCKET_MB = 4.0  # several buckets per model, so the overlap is visible on a 10-40 MB model
MiB = 1024 * 1024  # DDP's bucket_cap_mb counts MiB


def ddp_bucket_bytes(trainer: str, arch: str, overlap: bool) -> float | None:
    """The gradient buckets the lab's all-reduce runs with: DDP's when it overlaps (the torch
    trainer always does), None for the lab trainer's one call per layer after the backward."""
    if arch != "allreduce" or not (overlap or trainer == "torch"):
        return None
    return (TORCH_DDP_BUCKET_MB if trainer == "torch" else LAB_DDP_BUCKET_MB) * MiB


def check_bucket(trainer: str, arch: str, overlap: bool, bucket_size_bytes: float | None) -> None:
    """A grid's ``bucket_size`` states what the lab runs, or is left out (one call per layer in
    the models, as before): a size the lab does not run would compare two different jobs."""
    if bucket_size_bytes is None:
        return
    runs = ddp_bucket_bytes(trainer, arch, overlap)
    if runs is None:
        raise ConfigError("'bucket_size' applies to an all-reduce that overlaps (DDP's buckets); "
                          "this case's all-reduces one call per layer")
    if bucket_size_bytes != runs:
        size = format_size_bytes(runs)
        raise ConfigError(f"'bucket_size': the {trainer} trainer's DDP runs buckets of {size}, so "
                          f"state \"{size}\" or leave it out")


def check_trainer(trainer, arch: str, overlap: bool, ps_count: int, record_profile) -> None:
    """What the held-out ``torch`` trainer can do: one PS without overlap, or DDP (overlap)."""
    if trainer not in TRAINERS:
        raise ConfigError(f"trainer must be one of {TRAINERS}, got {trainer!r}")
    if trainer == "lab":
        return
    if arch == "ps" and (overlap or ps_count != 1):
        raise ConfigError("the torch trainer's parameter server (torch.distributed.rpc) is one "
                          "server without overlap: use overlap = false and one PS")
    if arch == "allreduce" and not overlap:
        raise ConfigError("the torch trainer's all-reduce is DistributedDataParallel, which "
                          "overlaps: use overlap = true")
    if record_profile:
        raise ConfigError("recording a profile needs the lab's own trainer")
