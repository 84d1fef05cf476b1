"""Parsing of human units, used only at the edges (CLI, files).

Internal units: seconds, bytes, bits per second.
"""
from __future__ import annotations

import math
import re

from .errors import ConfigError

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z/]*)\s*$")

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BIN_PREFIX = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

_TIME = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
         "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}


def _split(text: str, what: str) -> tuple[float, str]:
    m = _RE.match(str(text))
    if not m:
        raise ConfigError(f"cannot parse {what} {text!r}")
    value = float(m.group(1))
    if not math.isfinite(value):
        raise ConfigError(f"{what} {text!r} is not finite")
    return value, m.group(2)


def _scaled(unit: str, base_units: dict[str, float]) -> float | None:
    for prefixes in (_BIN_PREFIX, _PREFIX):
        for p, mult in prefixes.items():
            rest = unit[len(p):] if unit.startswith(p) else None
            if rest is not None and rest in base_units:
                return mult * base_units[rest]
    return None


def parse_bandwidth_bps(text: str | float) -> float:
    """'10Gbps' -> 1e10, '100Mbps' -> 1e8, '1.25GB/s' -> 1e10; a bare number is bits/s."""
    if isinstance(text, (int, float)):
        return _positive(float(text), "bandwidth", text)
    value, unit = _split(text, "bandwidth")
    mult = _scaled(unit, {"bps": 1.0, "bit/s": 1.0, "b/s": 1.0, "Bps": 8.0, "B/s": 8.0, "": 1.0})
    if mult is None:
        raise ConfigError(f"unknown bandwidth unit {unit!r} in {text!r} (use e.g. 10Gbps, 100Mbps, 1.25GB/s)")
    return _positive(value * mult, "bandwidth", text)


def parse_size_bytes(text: str | float) -> float:
    """'28MB' -> 28e6, '4KiB' -> 4096, '8Mb' -> 1e6; a bare number is bytes."""
    if isinstance(text, (int, float)):
        return _non_negative(float(text), "size", text)
    value, unit = _split(text, "size")
    mult = _scaled(unit, {"B": 1.0, "": 1.0, "b": 0.125, "bytes": 1.0})
    if mult is None:
        raise ConfigError(f"unknown size unit {unit!r} in {text!r} (use e.g. 28MB, 4KiB, 1GB)")
    return _non_negative(value * mult, "size", text)


def parse_duration_s(text: str | float) -> float:
    """'12ms' -> 0.012, '30s' -> 30; a bare number is seconds."""
    if isinstance(text, (int, float)):
        return _non_negative(float(text), "duration", text)
    value, unit = _split(text, "duration")
    if unit not in _TIME:
        raise ConfigError(f"unknown time unit {unit!r} in {text!r} (use e.g. 12ms, 30s, 5us, 30min, 2h)")
    return _non_negative(value * _TIME[unit], "duration", text)


def _positive(value: float, what: str, text) -> float:
    if not value > 0:
        raise ConfigError(f"{what} must be positive, got {text!r}")
    return value


def _non_negative(value: float, what: str, text) -> float:
    if not value >= 0:
        raise ConfigError(f"{what} must be non-negative, got {text!r}")
    return value


def format_bps(bps: float) -> str:
    for unit, mult in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bps"


def format_duration_s(seconds: float) -> str:
    """42 s, 17.3 min, 2.4 h, 3.1 d."""
    if not math.isfinite(seconds):
        return "never"
    for unit, mult, least in (("d", 86400.0, 1), ("h", 3600.0, 1), ("min", 60.0, 2)):
        if seconds >= least * mult:
            return f"{seconds / mult:.1f} {unit}"
    return f"{seconds:.3g} s"
