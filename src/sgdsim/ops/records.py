"""One operator measurement: the row every part of ``sgdsim.ops`` exchanges.

Times are seconds, one copy of the operator; ``params`` is the operator type's canonical
parameter dict (str -> int | float | str, the keys of ``optypes.OpType.params``), so two
measurements of the same operator on the same device always have the same ``key``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

ParamValue = int | float | str


@dataclass(frozen=True)
class Device:
    """Where a measurement was taken: ``name`` identifies it ("cpu-1t AMD EPYC", "NVIDIA H100")."""

    name: str
    kind: str  # "cpu" or "cuda"
    framework: str = ""  # "pytorch 2.13.0+cpu"
    driver: str = ""  # CUDA driver / runtime, empty on CPU


@dataclass(frozen=True)
class OpRecord:
    device: Device
    op: str  # operator type name, a key of optypes.REGISTRY ("conv2d", "mm", ...)
    params: dict[str, ParamValue]
    dtype: str  # "float32", "bfloat16", ...
    fwd_s: float
    bwd_s: float  # 0.0 for operators without a backward
    samples: int = 1  # differential measurements behind the medians
    fwd_spread: float = 0.0  # relative half-width of the middle 50 % of the samples
    bwd_spread: float = 0.0
    measured_at: float = field(default=0.0)  # unix seconds
    # True: the time was below what the timer resolves on this machine; fwd_s (bwd_s) is then
    # an upper bound (the whole M-copy run over M), not a measurement
    fwd_bound: bool = False
    bwd_bound: bool = False
    # seconds of the type's reference call, timed in pairs with this row's samples (ops/
    # reference.py): how fast the machine ran while this row was measured; 0.0: not timed
    fwd_ref_s: float = 0.0
    bwd_ref_s: float = 0.0

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What makes a row unique: re-measuring the same key updates, never duplicates."""
        return (self.device.name, self.op, params_key(self.params), self.dtype)

    def __post_init__(self) -> None:
        for name in ("fwd_s", "bwd_s", "fwd_spread", "bwd_spread", "fwd_ref_s", "bwd_ref_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def params_key(params: dict[str, ParamValue]) -> str:
    """Canonical text of a parameter dict: sorted keys, no spaces (equal dicts, equal keys)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def params_from_key(text: str) -> dict[str, ParamValue]:
    return json.loads(text)


def learnable(records) -> tuple[list, int]:
    """(the rows whose forward time is a measurement, how many were set aside): a bound (a time
    below the timer's resolution) or a 0 that an older timer stored says too little to fit."""
    kept = [r for r in records if r.fwd_s > 0 and not r.fwd_bound]
    return kept, len(records) - len(kept)
