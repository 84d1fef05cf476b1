"""The planner for large models (issue 37): every layout of tp × pp × dp × micro-batch ×
schedule × recomputation × ZeRO for each GPU count, pruned with the closed form
(``step.closed_step_s``), layouts that do not fit in memory excluded, the finalists simulated
(``step.predict_step``) and ranked by the objective."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ConfigError
from .devices import Device
from .layout import Layout
from .model import Transformer
from .step import closed_step_s, predict_step

OBJECTIVES = ("step-time", "cost-per-token")
MICRO_BATCHES = (1, 2, 4, 8)


@dataclass(frozen=True)
class PlanResult:
    finalists: list  # (Layout, StepPrediction), best first
    considered: int  # layouts that are possible
    too_big: int  # of those, how many do not fit in memory
    objective: str


def divisors(n: int, cap: int) -> list[int]:
    return [k for k in range(1, min(n, cap) + 1) if n % k == 0]


def layouts(model: Transformer, gpus: int, dev: Device, base: Layout, fixed: set) -> list[Layout]:
    """Every possible layout of ``gpus`` GPUs; the fields in ``fixed`` keep ``base``'s value."""
    out = []
    tps = [base.tp] if "tp" in fixed else divisors(model.kv_heads, dev.gpus_per_node)
    for tp in tps:
        pps = [base.pp] if "pp" in fixed else divisors(model.layers, gpus // tp)
        for pp in pps:
            if gpus % (tp * pp):
                continue
            for lay in _variants(replace(base, tp=tp, pp=pp, dp=gpus // (tp * pp)), fixed):
                try:
                    lay.check(model)
                except ConfigError:
                    continue
                out.append(lay)
    return out


def _variants(lay: Layout, fixed: set):
    mbs = [lay.mb] if "mb" in fixed else MICRO_BATCHES
    scheds = [(lay.schedule, lay.v)] if fixed & {"schedule", "v"} else [("1f1b", 1), ("interleaved", 2)]
    recs = [lay.recompute] if "recompute" in fixed else ["none", "selective", "full"]
    zeros = [lay.zero] if "zero" in fixed else [0, 1, 2, 3]
    for mb in mbs:
        for schedule, v in scheds:
            if lay.pp == 1 and schedule != "1f1b":
                continue
            for rec in recs:
                for zero in zeros:
                    yield replace(lay, mb=mb, schedule=schedule, v=v, recompute=rec, zero=zero)


def search(model: Transformer, dev: Device, gpu_counts, base: Layout, fixed: set, objective: str = "step-time",
           finalists: int = 5, progress=None) -> PlanResult:
    if objective not in OBJECTIVES:
        raise ConfigError(f"--objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    ranked, considered, too_big = [], 0, 0
    for n in gpu_counts:
        for lay in layouts(model, n, dev, base, fixed):
            considered += 1
            step, mem = closed_step_s(model, lay, dev)
            if not mem.fits(dev.hbm_bytes):
                too_big += 1
                continue
            ranked.append((_score(step, lay, objective), lay))
        if progress:
            progress()
    ranked.sort(key=lambda c: c[0])
    best = [(lay, predict_step(model, lay, dev)) for _, lay in ranked[:finalists]]
    best.sort(key=lambda c: _score(c[1].step_s, c[0], objective))
    return PlanResult(best, considered, too_big, objective)


def _score(step_s: float, lay: Layout, objective: str) -> float:
    """Step time, or GPU-seconds per step (the cost per token up to the price and the batch)."""
    return step_s if objective == "step-time" else step_s * lay.gpus


def check_fits_somewhere(result: PlanResult, what: str) -> None:
    if not result.finalists:
        raise ConfigError(f"no layout of {what} fits in memory ({result.considered} possible, "
                          f"{result.too_big} too big): give more GPUs or a larger device")


def result_rows(result: PlanResult, price_per_gpu_hour: float, model: Transformer) -> list[dict]:
    rows = []
    for lay, r in result.finalists:
        rows.append({"layout": lay.describe(), "gpus": lay.gpus, "step_time_s": r.step_s,
                     "tokens_per_s": r.tokens_per_s, "mfu": r.mfu,
                     "cost_per_million_tokens": lay.gpus * price_per_gpu_hour / 3600 / r.tokens_per_s * 1e6,
                     "memory_gib": r.memory.total / (1 << 30), "bubble": r.bubble})
    return rows
