"""Calibration from one real worker (ICPE §3.2.1 and §4.1, TPDS §2.1.2).

A standalone profile times the model's computation; a real worker also deserialises and copies
every tensor it receives and runs the TCP stack. Run one worker and one PS (or two all-reduce
ranks) of the real job on the target network, measure its step time, and this module finds
what the profile misses:

- the real step is *slower* than the model predicts: a receiver CPU cost per byte α
  (``parse_alpha_s_per_byte``, charged like ``--overhead-alpha``: CPU, not shared link time);
- *faster*: the network delivers more than the hardware file says; the bandwidth is raised
  until the prediction matches.

Both are one-dimensional: the predicted step time grows with α and falls with the bandwidth,
so bisection finds the value (to 0.1 % of the step time). The result is a hardware file that
``predict --hardware``, ``validate`` (grid key ``hardware``) and every model read.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .spec import ARCHITECTURES
from .spec.registries import DEFAULT_ARCH
from .errors import ConfigError
from .hardware import Hardware
from .predict import predict_with
from .profile.model import Profile
from .sim.stats import prediction_half_width
from .units import format_bps

TOLERANCE = 1e-3
STEPS = 200  # measured steps of the deterministic 1-worker (2-rank) model run


def calibration_workers(arch: str) -> int:
    """The run calibration fits: one worker and a PS, or two all-reduce ranks."""
    return 1 if ARCHITECTURES[arch].servers else 2  # one rank has nothing to all-reduce


def model_step_s(profile: Profile, hw: Hardware, arch: str, mode: str, alpha: float,
                 bandwidth_bps: float | None = None, ps_count: int | None = None,
                 bucket_size_bytes: float | None = None) -> float:
    """Predicted time of one worker's step with the calibration candidate applied."""
    kw = hw.predict_kwargs(arch, mode, ps_count)
    kw.update(overhead_alpha=alpha, bandwidth=bandwidth_bps or kw["bandwidth"], ps_count=ps_count,
              **job_keywords(bucket_size_bytes))
    kw.update(arch=arch, mode=mode, replications=1, steps=STEPS)
    pt = predict_with(profile, kw, workers=calibration_workers(arch))[0]
    return pt.step_time_s


def job_keywords(bucket_size_bytes: float | None) -> dict:
    """What the measured job did that a hardware file does not hold: DDP's gradient buckets (a
    2-rank run with 25 MiB buckets overlaps differently from one call per layer)."""
    return {} if bucket_size_bytes is None else {"bucket_size": bucket_size_bytes}


def run_spread_rel(step_times_s) -> float:
    """Relative half-width of a 95 % prediction interval for one more run, from repeated runs'
    mean step times: t·s/mean·sqrt(1 + 1/n) (0 from a single run)."""
    x = np.asarray(step_times_s, float)
    return prediction_half_width(x) / float(x.mean()) if len(x) >= 2 else 0.0


def calibrate(profile: Profile, measured_step_s, hw: Hardware, arch: str = DEFAULT_ARCH,
              mode: str = "async", ps_count: int | None = None,
              bucket_size_bytes: float | None = None) -> Hardware:
    """The hardware file with α (or the bandwidth) fitted to ``measured_step_s`` (measured with
    ``ps_count`` parameter servers, None: the profile's; all-reduce: with DDP buckets of
    ``bucket_size_bytes``, None: one call per layer).

    ``measured_step_s``: one mean step time, or those of several runs of the same job. Their
    mean is fitted; their spread becomes ``run_spread_rel``, the run-to-run noise of the real
    system that no simulator replication shows, which widens every fine interval (``predict``).
    """
    runs = [float(v) for v in np.atleast_1d(np.asarray(measured_step_s, float))]
    if not runs or not all(math.isfinite(v) and v > 0 for v in runs):
        raise ConfigError(f"the measured step times must be positive numbers, got {measured_step_s}")
    measured_step_s = sum(runs) / len(runs)

    def step(alpha: float, bandwidth_bps: float | None = None) -> float:
        return model_step_s(profile, hw, arch, mode, alpha, bandwidth_bps, ps_count, bucket_size_bytes)

    before = step(0.0)
    alpha, bw = 0.0, hw.bandwidth_for(arch)
    if measured_step_s > before * (1 + TOLERANCE):
        # at this α the downlink's parsing alone takes the measured step: an upper bound
        top = measured_step_s / max(profile.model_bytes(), 1.0)
        alpha = _bisect(step, measured_step_s, 0.0, top, rising=True)
    elif measured_step_s < before * (1 - TOLERANCE):
        top = bw * 1e3
        if step(0.0, top) > measured_step_s:
            raise ConfigError(f"the measured step ({measured_step_s:.4g} s) is shorter than the "
                              f"profile's computation allows: is it the same job and batch size?")
        bw = _bisect(lambda b: step(0.0, b), measured_step_s, bw, top, rising=False)
    after = step(alpha, bw)
    record = {"profile": profile.job.model, "batch_size": profile.job.batch_size, "arch": arch,
              "mode": mode, **({"ps_count": ps_count} if ps_count else {}),
              **({"bucket_size_bytes": bucket_size_bytes} if bucket_size_bytes is not None else {}),
              **({"overlap": profile.job.overlap} if isinstance(profile.job.overlap, bool) else {}),
              "measured_step_s": measured_step_s, "predicted_step_s_before": before,
              "predicted_step_s_after": after}
    if len(runs) > 1:
        record["runs_step_s"] = runs
    changes = {"parse_alpha_s_per_byte": alpha, "measured": {**hw.measured, "calibration": record},
               "run_spread_rel": run_spread_rel(runs) if len(runs) > 1 else hw.run_spread_rel}
    if bw != hw.bandwidth_for(arch):
        changes["allreduce_bandwidth_bps" if "collective" in ARCHITECTURES[arch].options else "bandwidth_bps"] = bw
    return dataclasses.replace(hw, **changes)


def summary(hw: Hardware, arch: str) -> str:
    """One line on a calibrated file: the measured step, the model before and after, the fit."""
    cal = hw.measured["calibration"]
    return (f"measured step {cal['measured_step_s'] * 1e3:.1f} ms; the model predicted "
            f"{cal['predicted_step_s_before'] * 1e3:.1f} ms, now "
            f"{cal['predicted_step_s_after'] * 1e3:.1f} ms with receiver CPU "
            f"{(hw.parse_alpha_s_per_byte or 0.0) * 1e9:.3g} ns/byte and bandwidth "
            f"{format_bps(hw.bandwidth_for(arch))}"
            + (f"; {len(cal['runs_step_s'])} runs vary by ±{hw.run_spread_rel:.1%} (95 % for "
               f"one more run)" if "runs_step_s" in cal and hw.run_spread_rel is not None else ""))


def _bisect(f, target: float, lo: float, hi: float, rising: bool) -> float:
    """x in [lo, hi] with f(x) = target, for f monotone (rising or falling) across target."""
    sign = 1.0 if rising else -1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        err = f(mid) - target
        if abs(err) <= TOLERANCE * 1e-2 * target or hi - lo <= 1e-12 * hi:
            return mid
        if sign * err < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
