"""Parsing of human units, used only at the edges (CLI, files).

Internal units: seconds, bytes, bytes per second (``parse_bandwidth_Bps``); users give and
read bandwidths in bits per second, and files store them so (``*_bps`` fields).
"""
from __future__ import annotations

import math
import numbers
import re

from .errors import ConfigError

# a sign is read, so that "-1Gbps" is refused as negative, not as unreadable
_NUM = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-zµ/]*)\s*$")

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BIN_PREFIX = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

_TIME = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
         "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}


_WHOLE = re.compile(r"[-+]?[0-9]+")  # ASCII digits only: int() would take '١٢' too
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
MAX_NUMERAL = 400  # characters: longer numbers are refused before int() or float() reads them
_FLOAT_MAX = 1.7976931348623157e308


def _show(value) -> str:
    """``value`` for an error message: one line, at most about 40 characters."""
    if isinstance(value, int) and value.bit_length() > 1000:  # repr() refuses > 4300 digits
        return f"an integer of about {value.bit_length() * 0.30103:.0f} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"


def _fmt(x) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def is_whole_numeral(text) -> bool:
    """Whether ``text`` is ASCII digits (surrounding spaces allowed): what a count looks like."""
    return isinstance(text, str) and _WHOLE.fullmatch(text.strip()) is not None \
        and text.strip()[0] not in "+-"


def _numeral(value, what: str, integer: bool) -> int | float:
    """``value`` (text, or a number read from a file) as an int or float, not yet bounded."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ConfigError(f"{what} must be a number, got {_show(value)}")
    if isinstance(value, numbers.Integral):  # numpy's integers too
        value = int(value)
    elif not isinstance(value, (float, str)):  # numpy's floats, fractions
        try:
            value = float(value)
        except OverflowError:
            raise ConfigError(f"{what} must be a finite number, got {_show(value)}") from None
    kind = "a whole number" if integer else "a number"
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_NUMERAL:
            raise ConfigError(f"{what} must be {kind} of at most {MAX_NUMERAL} characters, "
                              f"got {_show(value)}")
        if not (_WHOLE if integer else _DECIMAL).fullmatch(text):
            raise ConfigError(f"{what} must be {kind} (ASCII digits), got {_show(value)}")
        value = int(text) if integer else float(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{what} must be a finite number, got {_show(value)}")
    if integer and isinstance(value, float):
        if not value.is_integer():
            raise ConfigError(f"{what} must be {kind}, got {_show(value)}")
        value = int(value)
    return value


def parse_number(value, what: str, *, lo: int | float, hi: int | float,
                 integer: bool = False) -> int | float:
    """``value`` (a user's text such as '42', '1e-3', or a number from a file) as a finite
    number in [lo, hi] (finite bounds): an int when ``integer`` (text: ASCII digits only),
    else a float. Anything else is one ConfigError naming ``what``; never another exception
    (a 400-digit integer is compared as an int, never turned into a float unguarded)."""
    number = _numeral(value, what, integer)
    if number < lo:  # int against float compares exactly, without converting
        raise ConfigError(f"{what} must be at least {_fmt(lo)}, got {_show(value)}")
    if number > hi or not -_FLOAT_MAX <= number <= _FLOAT_MAX:
        raise ConfigError(f"{what} must be at most {_fmt(hi)}, got {_show(value)}")
    return int(number) if integer else float(number)


def _split(text: str, what: str) -> tuple[float, str]:
    m = _RE.match(str(text))
    if not m:
        raise ConfigError(f"cannot parse {what} {_show(text)}")
    if len(m.group(1)) > MAX_NUMERAL:
        raise ConfigError(f"{what} {_show(text)} has too many digits")
    value = float(m.group(1)) + 0.0  # '-0s' is 0, not -0.0
    if not math.isfinite(value):
        raise ConfigError(f"{what} {text!r} is not finite")
    return value, m.group(2)


def _number_in(value, what: str) -> float:
    """A number a caller passed (not text) as a finite float: huge ints refused, not raised."""
    return float(parse_number(value, what, lo=-_FLOAT_MAX, hi=_FLOAT_MAX))


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
        return _positive(_number_in(text, "bandwidth"), "bandwidth", text)
    value, unit = _split(text, "bandwidth")
    mult = _scaled(unit, {"bps": 1.0, "bit/s": 1.0, "b/s": 1.0, "Bps": 8.0, "B/s": 8.0, "": 1.0})
    if mult is None:
        raise ConfigError(f"unknown bandwidth unit {unit!r} in {text!r} (use e.g. 10Gbps, 100Mbps, 1.25GB/s)")
    return _positive(value * mult, "bandwidth", text)


def parse_size_bytes(text: str | float) -> float:
    """'28MB' -> 28e6, '4KiB' -> 4096, '8Mb' -> 1e6; a bare number is bytes."""
    if isinstance(text, (int, float)):
        return _non_negative(_number_in(text, "size"), "size", text)
    value, unit = _split(text, "size")
    mult = _scaled(unit, {"B": 1.0, "": 1.0, "b": 0.125, "bytes": 1.0})
    if mult is None:
        raise ConfigError(f"unknown size unit {unit!r} in {text!r} (use e.g. 28MB, 4KiB, 1GB)")
    return _non_negative(value * mult, "size", text)


def parse_duration_s(text: str | float) -> float:
    """'12ms' -> 0.012, '30s' -> 30; a bare number is seconds."""
    if isinstance(text, (int, float)):
        return _non_negative(_number_in(text, "duration"), "duration", text)
    value, unit = _split(text, "duration")
    if unit not in _TIME:
        raise ConfigError(f"unknown time unit {unit!r} in {text!r} (use e.g. 12ms, 30s, 5us, 30min, 2h)")
    return _non_negative(value * _TIME[unit], "duration", text)


def bare_number(text: str) -> bool:
    """A non-zero number without a unit: ambiguous where the unit is a habit, not a rule (a
    duration: papers quote ms, files hold s; a bucket: DDP's option counts MB)."""
    try:
        return float(text) != 0.0
    except ValueError:
        return False


def parse_duration_with_unit_s(text: str, option: str) -> float:
    """A duration the user must qualify: a bare number is refused rather than read as seconds."""
    if bare_number(text):
        raise ConfigError(f"{option} {text} has no unit (write e.g. {text}ms or {text}s)")
    return parse_duration_s(text)


def parse_size_with_unit_bytes(text: str | float, option: str) -> float:
    """A size the user must qualify: a bare number in text is refused rather than read as bytes
    (``--bucket-size 25`` meant as DDP's ``bucket_cap_mb=25`` would be 25-byte buckets)."""
    if isinstance(text, str) and bare_number(text):
        raise ConfigError(f"{option} {text} has no unit (write e.g. {text}MB or {text}MiB)")
    return parse_size_bytes(text)


def _positive(value: float, what: str, text) -> float:
    if not 0 < value < math.inf:  # '1e308Tbps': each factor finite, the product not
        raise ConfigError(f"{what} must be positive and finite, got {_show(text)}")
    return value


def _non_negative(value: float, what: str, text) -> float:
    if not 0 <= value < math.inf:
        raise ConfigError(f"{what} must be non-negative and finite, got {_show(text)}")
    return value


def format_bps(bps: float) -> str:
    for unit, mult in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bps"


def format_size_bytes(n: float) -> str:
    """A size in bytes as users give it, exact where it can be: 26214400 -> '25MiB',
    28e6 -> '28MB' (both read back by ``parse_size_bytes``)."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        v = n / mult
        if 1 <= v < 1024 and v * 100 == round(v * 100):
            return f"{v:g}{unit}"
    for unit, mult in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= mult:
            return f"{n / mult:.4g}{unit}"
    return f"{n:g}B"


def format_duration_s(seconds: float) -> str:
    """42 s, 17.3 min, 2.4 h, 3.1 d."""
    if not math.isfinite(seconds):
        return "never"
    for unit, mult, least in (("d", 86400.0, 1), ("h", 3600.0, 1), ("min", 60.0, 2)):
        if seconds >= least * mult:
            return f"{seconds / mult:.1f} {unit}"
    return f"{seconds:.3g} s"


def parse_bandwidth_Bps(text: str | float) -> float:
    """A bandwidth as users give it ('10Gbps', '1.25GB/s'; a bare number is bits/s) in the
    internal unit, bytes/s: the one place bits become bytes."""
    return parse_bandwidth_bps(text) / 8


def format_bandwidth(Bps: float) -> str:
    """A bandwidth in bytes/s as users give it, in bits per second: 1.25e9 -> '10Gbps'."""
    return format_bps(8 * Bps)
