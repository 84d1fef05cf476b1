"""The documented limits of a spec (docs/simulator.md) and the checks every spec shares.

Outside these limits an answer would be meaningless or a run would not end in reasonable
time; each is refused in one line, naming the option as users type it, before any work.
Bandwidths are bytes/s inside; messages speak bits/s, as users give them.
"""
from __future__ import annotations

import math

from ..errors import ConfigError

MAX_SEED = 2**63 - 1
MIN_BANDWIDTH_BPS, MAX_BANDWIDTH_BPS = 1e3 / 8, 1e15 / 8  # 1 kbit/s .. 1 Pbit/s, in bytes/s
MAX_DURATION_S = 3600.0  # a per-message or per-step overhead, a stall, a delay
MAX_OVERHEAD_ALPHA_S_PER_BYTE = 1e-3  # 1 ms/B is a 8 kbit/s receiver
MAX_SIM_WORKERS = 1024  # the simulator; the analytical models go to MAX_WORKERS
MAX_WORKERS = 100_000
MAX_POINTS = 2_000  # worker counts in one call
MAX_SIM_WORKER_SUM = 20_000  # simulated workers over all points of one call: 1-200, not 1-1024
MAX_STEPS = 100_000  # measured steps per worker
MAX_WARMUP = 10_000
MAX_PS_COUNT = 1024  # the profile format's server indices, 0..1023
MAX_BUCKET_BYTES = 1e11
MAX_GPUS_PER_NODE = 64
MAX_HOST_CORES = 1 << 20
MAX_CONTENTION = 10.0
MAX_REPLICATIONS = 100
MAX_CV = 10.0


def check_bandwidth(Bps: float, what: str = "bandwidth") -> float:
    if not (isinstance(Bps, (int, float)) and MIN_BANDWIDTH_BPS <= Bps <= MAX_BANDWIDTH_BPS):
        raise ConfigError(f"{what} must be between 1kbps and 1Pbps, got {_bits(Bps)}")
    return float(Bps)


def _bits(Bps) -> str:
    try:
        return f"{8 * float(Bps):g} bit/s"
    except (TypeError, ValueError, OverflowError):
        return repr(Bps)


def check_range(value, what: str, lo: float, hi: float, *, lo_open: bool = False,
                hi_open: bool = False, text: str | None = None) -> float:
    """``value`` as a float inside [lo, hi] (open ends as asked), else one line naming ``what``."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        x = math.nan
    inside = (x > lo if lo_open else x >= lo) and (x < hi if hi_open else x <= hi)
    if not inside:
        span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ConfigError(f"{what} must be {text or 'in ' + span}, got {value!r}")
    return x


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed must be an integer from 0 to 2^63-1, got {seed}")
    return seed


def check_duration(value, what: str) -> float:
    return check_range(value, what, 0.0, MAX_DURATION_S, text="a duration from 0 to 1h")


def pair(value, what: str) -> tuple[float, float]:
    """(pulls, pushes) from one number for both, or two."""
    try:
        values = tuple(float(v) for v in value) if isinstance(value, (tuple, list)) else (float(value),)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{what} expects a number or two (pulls, pushes), got {value!r}") from None
    if len(values) not in (1, 2):
        raise ConfigError(f"{what} expects one value or two (pulls, pushes), got {value!r}")
    return values * 2 if len(values) == 1 else values


def durations(value, what: str) -> tuple[float, float]:
    """A (pulls, pushes) pair of durations from 0 to 1h."""
    out = pair(value, what)
    for d in out:
        check_duration(d, what)
    return out
