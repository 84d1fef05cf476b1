"""The mixed precisions a step can train in (``--autocast``), without importing torch."""
from __future__ import annotations

from ..errors import ConfigError

AUTOCAST = ("bfloat16", "float16")  # the types torch.autocast runs a forward in (--autocast)
SCALED = ("float16",)  # those trained with a gradient scaler (scaler.py: float16's range)


def needs_scaler(autocast: str | None) -> bool:
    return autocast in SCALED


def check_autocast(autocast, dtype: str | None = None) -> None:
    """``autocast`` one of ``AUTOCAST`` or None, and not beside a whole-step ``dtype``."""
    if autocast is not None and autocast not in AUTOCAST:
        raise ConfigError(f"autocast runs the forward in {' or '.join(AUTOCAST)}, got {autocast!r}")
    if autocast and dtype not in (None, "float32"):
        raise ConfigError(f"--autocast {autocast} and --dtype {dtype}: autocast is mixed "
                          f"precision, --dtype the whole step in one type; give one of them")
