"""The mixed precisions a step can train in (``--autocast``), without importing torch."""
from __future__ import annotations

AUTOCAST = ("bfloat16", "float16")  # the types torch.autocast runs a forward in (--autocast)
SCALED = ("float16",)  # those trained with a gradient scaler (scaler.py: float16's range)


def needs_scaler(autocast: str | None) -> bool:
    return autocast in SCALED
