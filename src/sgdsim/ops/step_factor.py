"""What a training step costs on a device beyond its calls: the median, over the model steps
timed there (``ops measure --model``), of the step timed whole over the sum of its calls' rows.
``profile --estimate --step-factor`` scales an estimate for that device by it: not the
default in float32, since held out on run 30 it moved ResNet-50 out of 15 %; under autocast
the default when autocast steps are timed (runs 60 and 62, docs/ops-runs.md).

Timed one type at a time, the calls leave out what runs between them (Python, autograd's graph,
the optimizer's loop) and the caches their neighbours leave: on the committed step tables a
ResNet-50, BERT or GPT-2 step ran a median 13.5 % above its calls' exact sum on a Xeon and 7 %
on an EPYC, and scaled by the other runs' median the estimator's median step error fell 16.1 →
9.9 % on the Xeon (docs/ops-runs.md).
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

# How far one model's step strays from its device's factor where too few steps were timed to
# say: the median |ratio / the CPU's median - 1| over the committed step tables of ResNet-50,
# BERT and GPT-2, across days (Xeon 0.082 over 52 steps, EPYC 0.060 over 66; docs/ops-runs.md).
FEW_STEPS_SPREAD_REL = 0.08
FEW_STEPS = 3  # fewer timed steps than this: their own spread says too little


@dataclass(frozen=True)
class StepFactor:
    factor: float  # the median step_s / calls_s
    low: float  # the smallest and the largest ratio timed
    high: float
    steps: int  # how many steps (model, batch) it rests on
    spread_rel: float  # how far one model's ratio strays from ``factor``: its part of the error

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        spread = f", {self.low:.3f}-{self.high:.3f}" if self.steps > 1 else ""
        return (f"step factor {self.factor:.3f} (the median of {self.steps} model step(s) timed "
                f"there over their calls' sum{spread}; ±{self.spread_rel:.0%} in the step's error)")


def factor_of(rows: list[dict]) -> StepFactor | None:
    """``rows``: ``db.load_steps`` rows; None if there are none."""
    ratios = [r["step_s"] / r["calls_s"] for r in rows]
    if not ratios:
        return None
    factor = statistics.median(ratios)
    spread = statistics.median(abs(x / factor - 1) for x in ratios)
    if len(ratios) < FEW_STEPS:
        spread = max(spread, FEW_STEPS_SPREAD_REL)
    return StepFactor(factor, min(ratios), max(ratios), len(ratios), spread)


def precision_key(dtype: str, autocast: str | None = None) -> str:
    """The precision a timed step is stored under: its dtype, or "autocast-bfloat16" for a
    step under autocast (mixed precision costs a step more beyond its calls than float32:
    1.07-1.19x against 0.99-1.09x on run 59's EPYC, docs/ops-runs.md)."""
    return f"autocast-{autocast}" if autocast else dtype


def applies_by_default(autocast: str | None) -> bool:
    """Whether an estimate is scaled by its device's step factor unasked (when one is timed
    there): under autocast, whose steps ran 1.04-1.19x their calls and whose estimates came
    within 13 % with the factor (runs 60 and 62); not in float32, where held out it moved
    ResNet-50 out of 15 % (run 30)."""
    return autocast is not None


def device_factor(db, device: str, dtype: str, leave_out: str | None = None) -> StepFactor | None:
    """The factor of ``device``'s steps in ``dtype``; ``leave_out``: a model whose own steps
    do not count (to judge an estimate of it on steps it is not among)."""
    return factor_of([r for r in db.load_steps(device, dtype) if r["model"] != leave_out])


def profile_step_s(profile) -> float:
    """A profile's step: its compute and the optimizer's updates, as a plain step runs them."""
    upd = sum(float(profile.durations_s[:, i].mean()) for i, op in enumerate(profile.ops)
              if op.id.startswith("upd:"))
    return profile.mean_compute_s() + upd
