"""Is a measured profile trustworthy? Evidence from its own steps and from the machine's CPU.

A profile taken while something else loads the CPU looks fine as a file but is not: a user's
report had forward + backward recorded as 13.19 ms against a median step of 0.99 ms, because a
few steps stalled for 9-100 ms inside a layer. Two kinds of evidence catch that:

* the steps themselves: how widely they spread, how many stalled (far above the median), and
  whether what the profile records per step exceeds the median step it came from;
* the machine: CPU time that other processes used while the steps ran (``/proc/stat`` minus
  this process's own), in cores.

Stalled steps are dropped from the profile (their per-layer times hold the stall); the rest of
the evidence is recorded in the profile (``profiler.quality``), shown by ``sgdsim info`` and
warned about by ``sgdsim predict``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ..cpu_load import MAX_OTHERS_CORES

STALL = 1.5  # a step this many times the median stalled (a quiet machine stays well under)
MAX_STALLED = 0.10  # more than this share of stalled steps: the machine was busy
MAX_SPREAD = 0.5  # (90th - 10th percentile) / median of the plain steps (quiet: ~0.2 at 2 ms)
MAX_RECORDED = 1.2  # recorded forward + backward over the median profiled step
MIN_STEPS_TO_DROP = 10


@dataclass(frozen=True)
class Quality:
    """The evidence (fractions, cores) and, in ``reasons``, what made it shaky (empty: fine)."""

    spread: float
    stalled: int
    steps: int
    recorded_over_median: float
    others_cores: float | None
    reasons: tuple[str, ...]

    @property
    def shaky(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict:
        return {**asdict(self), "reasons": list(self.reasons), "shaky": self.shaky}


def stalled_steps(steps_s) -> np.ndarray:
    """A boolean mask of the steps that took more than ``STALL`` times the median."""
    s = np.asarray(steps_s, dtype=float)
    return s > STALL * float(np.median(s))


def recorded_s(measured) -> np.ndarray:
    """What the profile records for each profiled step: its layers' times summed."""
    return measured.fwd.sum(axis=1) + measured.bwd.sum(axis=1) + measured.upd.sum(axis=1)


def drop_stalled(measured):
    """``measured`` without its stalled profiled steps (their layer times hold the stall), and
    the indices dropped. With fewer than ``MIN_STEPS_TO_DROP`` steps a median says too little
    to call any step stalled. Every step's wall time stays in the profile's notes."""
    if len(measured.profiled_steps_s) < MIN_STEPS_TO_DROP:
        return measured, []
    stalled = stalled_steps(measured.profiled_steps_s)
    if not stalled.any():
        return measured, []
    keep = ~stalled
    return (replace(measured, fwd=measured.fwd[keep], bwd=measured.bwd[keep],
                    upd=measured.upd[keep]), [int(i) for i in np.flatnonzero(stalled)])


def judge(plain_s, profiled_s, recorded_s, others_cores: float | None) -> Quality:
    """``plain_s``/``profiled_s``: each step's wall time without and with hooks;
    ``recorded_s``: what the profile records per profiled step (its compute summed), for the
    steps it keeps (``drop_stalled``)."""
    plain, prof = np.asarray(plain_s, float), np.asarray(profiled_s, float)
    med = float(np.median(prof))
    p10, p90 = np.percentile(plain, [10, 90])
    spread = float((p90 - p10) / np.median(plain))
    stalled = int(stalled_steps(plain).sum() + stalled_steps(prof).sum())
    steps = len(plain) + len(prof)
    recorded = float(np.mean(recorded_s)) / med
    reasons = []
    if stalled > MAX_STALLED * steps:
        reasons.append(f"{stalled} of {steps} steps stalled (over {STALL:g}x the median)")
    if spread > MAX_SPREAD:
        reasons.append(f"the steps spread {spread:.0%} (10th to 90th percentile)")
    if recorded > MAX_RECORDED:
        reasons.append(f"the recorded forward+backward is {recorded:.2f}x the median step")
    if others_cores is not None and others_cores > MAX_OTHERS_CORES:
        reasons.append(f"other processes used {others_cores:.1f} CPU cores meanwhile")
    return Quality(spread=spread, stalled=stalled, steps=steps, recorded_over_median=recorded,
                   others_cores=others_cores, reasons=tuple(reasons))


def describe(quality: dict) -> str:
    """One line for ``sgdsim info`` from a profile's recorded ``profiler.quality``."""
    try:
        others = quality.get("others_cores")
        evidence = (f"steps spread {float(quality['spread']):.0%}, {int(quality['stalled'])} of "
                    f"{int(quality['steps'])} stalled, recorded/median step "
                    f"{float(quality['recorded_over_median']):.2f}"
                    + (f", other processes {float(others):.1f} cores" if others is not None else "")
                    + (f"; {len(quality['dropped_steps'])} stalled step(s) left out of the profile"
                       if quality.get("dropped_steps") else ""))
        reasons = [str(r) for r in quality.get("reasons") or []]
    except (KeyError, TypeError, ValueError):  # a hand-edited file: say so, do not guess
        return "the profile's quality notes are unreadable"
    if reasons:
        return (f"measured on a busy machine ({'; '.join(reasons)}): "
                f"profile again when it is quiet [{evidence}]")
    return f"measured on a quiet machine [{evidence}]"


def profiler_notes(profile) -> dict | None:
    """The ``profiler`` notes ``sgdsim profile`` wrote into a profile (None: none, as for
    imported profiles)."""
    extra = getattr(profile, "extra", None)
    notes = extra.get("profiler") if isinstance(extra, dict) else None
    return notes if isinstance(notes, dict) else None


def recorded(profile) -> dict | None:
    """The ``profiler.quality`` a profile recorded (None: none, as for imported profiles)."""
    quality = (profiler_notes(profile) or {}).get("quality")
    return quality if isinstance(quality, dict) else None


def warning_for(profile, label: str) -> str | None:
    """The one-line warning ``predict`` gives for a profile measured on a busy machine."""
    reasons = (recorded(profile) or {}).get("reasons")
    if not reasons or not isinstance(reasons, list):
        return None
    return (f"warning: {label} was measured on a busy machine ({'; '.join(map(str, reasons))}); "
            f"its times may be too long: profile it again when the machine is quiet")
