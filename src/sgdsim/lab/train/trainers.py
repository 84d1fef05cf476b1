"""The lab's two trainer families (no torch needed to check a choice).

"lab": the project's own trainer (``ps.py``, ``worker.py``, ``allreduce.py``), which the models'
knobs were fitted on; "torch": PyTorch's textbook implementations (a PS over
``torch.distributed.rpc``, ``rpc_ps.py``, and DistributedDataParallel with its default 25 MB
buckets), held out from every fit.
"""
from __future__ import annotations

from ...errors import ConfigError

TRAINERS = ("lab", "torch")
TORCH_DDP_BUCKET_MB = 25.0


def check_trainer(trainer, arch: str, overlap: bool, ps_count: int, record_profile,
                  stagger_s) -> None:
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
    if record_profile or stagger_s:
        raise ConfigError("recording a profile and a start stagger need the lab's own trainer")
