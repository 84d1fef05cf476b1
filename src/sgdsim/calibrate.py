"""Pick the Eq. 5 threshold ρ_T from measured throughputs (TPDS §4.2.1)."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np

from .analytic.async_ps import async_ps
from .errors import ProfileError
from .evaluate.jobs import coarse_profile
from .spec.limits import MAX_WORKERS, check_bandwidth
from .predict import load_any_profile
from .units import parse_bandwidth_Bps

CANDIDATES = tuple(round(0.1 * i, 1) for i in range(1, 11))


@dataclass(frozen=True)
class Calibration:
    best: float
    table: tuple[tuple[float, float, float], ...]  # (rho_T, mean |error| %, max |error| %)


def read_measured(path: str) -> list[tuple[int, float]]:
    """CSV with a header naming ``workers`` and ``throughput`` (examples/s)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ProfileError(f"measured file {path}: cannot read ({e.strerror})") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise ProfileError(f"measured file {path}: not a UTF-8 CSV file ({e})") from None
    out = []
    for i, row in enumerate(rows, start=2):
        try:
            w, x = int(row["workers"]), float(row["throughput"])
        except (KeyError, TypeError, ValueError):
            raise ProfileError(f"measured file {path}: line {i}: need integer workers and numeric "
                               f"throughput columns") from None
        if not 1 <= w <= MAX_WORKERS or not 0 < x < math.inf:
            raise ProfileError(f"measured file {path}: line {i}: workers must be from 1 to "
                               f"{MAX_WORKERS:,} and throughput a positive finite number")
        out.append((w, x))
    if not out:
        raise ProfileError(f"measured file {path}: no rows")
    return out


def calibrate_threshold(profile, measured: list[tuple[int, float]], bandwidth) -> Calibration:
    """Error of the coarse async model for each ρ_T in {0.1, ..., 1.0}; the best minimises
    the mean absolute relative error."""
    c = coarse_profile(load_any_profile(profile))
    c.check_has_work()
    B = check_bandwidth(parse_bandwidth_Bps(bandwidth))  # the simulator's range: below it service times overflow to inf
    table = []
    for rho in CANDIDATES:
        errs = [abs(async_ps([(c, w)], B, "threshold", rho).throughput - x) / x * 100 for w, x in measured]
        table.append((rho, float(np.mean(errs)), float(np.max(errs))))
    best = min(table, key=lambda t: (t[1], t[0]))[0]
    return Calibration(best=best, table=tuple(table))


__all__ = ["calibrate_threshold", "read_measured", "Calibration"]
