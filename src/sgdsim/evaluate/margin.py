"""What the fine interval for one real run holds beyond the simulated runs: the real runs'
spread and the model's own error (its margin), neither of which the replications can see.

A fine prediction's interval holds the spread of independent simulated runs and the real
runs' spread at calibration (``run_spread_rel``). Neither holds the model's own error, which
on the lab is a bias more than noise: 18 % of the single runs of the 37 committed points fell
outside an interval meant to hold 95 % of them, one-sided, at the points whose simulated runs
agree (sync PS and all-reduce on 8, the two-PS MLP) as much as at the bimodal ones.

So the interval's relative half-width h, on each side, becomes sqrt(h² + m²), m being the
model's error as single validation runs measured it (independent of the runs' spread, hence
the quadrature). m is fitted by split conformal prediction: every run x of a point predicted p
scores the margin it needs, sqrt(max(0, (x/p − 1)² − h²)), and m is the ⌈level·(n + 1)⌉-th
smallest of the n scores: then a new run, exchangeable with those, falls inside with
probability at least ``level``. ``sgdsim validate`` prints the margin its runs call for.
"""
from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

from ..point import PredictionPoint
from ..spec import MODEL_ERROR_REL, Margin  # noqa: F401  (the default margin and its measurement)


def for_one_run(pt: PredictionPoint, margin: Margin) -> PredictionPoint:
    """The simulator's interval widened to one real run's: at least the real runs' own spread
    (``run_spread_rel``, from calibration), then the model's error in quadrature; the point
    says where the margin came from."""
    pt = with_model_error(with_run_spread(at_level(pt, margin.level), margin.run_spread_rel),
                          _with_fit(margin.model_error_rel, margin))
    pt = replace(pt, interval_level=margin.level)
    return replace(pt, margin_source=_source(margin)) if pt.model_error_rel > 0 else pt


def coarse_for_one_run(pt: PredictionPoint, margin: Margin, asynchronous: bool = False) -> PredictionPoint:
    """A coarse point (one value) gets the coarse model's own error as its interval: that of
    the MVA of async PS (``asynchronous``) or of the closed forms, each fitted on its own runs."""
    error = margin.coarse_async_error_rel if asynchronous else margin.coarse_error_rel
    pt = replace(with_model_error(pt, _with_fit(error, margin)), interval_level=margin.level)
    return replace(pt, margin_source=_source(margin)) if pt.model_error_rel > 0 else pt


def _source(margin: Margin) -> str:
    text = margin.source
    if margin.fit_rel:
        text += f", with a pilot calibration's ±{margin.fit_rel * level_scale(margin.level):.1%}"
    if margin.profile_rel:
        text += (f", with the estimated profile's ±{margin.profile_rel:.1%} (its operators' estimates, "
                 "time-weighted)")
    return text


def _with_fit(error_rel: float, margin: Margin) -> float:
    """The model's error, a pilot fit's uncertainty (rescaled to the level) and an estimated
    profile's error, in quadrature. The profile's is a typical (mean) error, not a bound: it
    is added as it is, at every level."""
    if not (margin.fit_rel or margin.profile_rel):
        return error_rel
    return math.hypot(error_rel, margin.fit_rel * level_scale(margin.level), margin.profile_rel)


def with_estimated_profile(control, job):
    """``control`` with its margin widened by the job's estimated profiles' own error (the
    largest of its classes'), unless the margin was set to 0 (the simulator's spread alone)."""
    error = max(profile_error_rel(c.profile) for c in job.classes)
    if error <= 0 or control.margin.model_error_rel == 0:
        return control
    return replace(control, margin=replace(control.margin, profile_rel=error))


ESTIMATED_DEFAULT_REL = 0.30  # an estimated profile from before step_error_rel was recorded


def profile_error_rel(profile) -> float:
    """An estimated profile's step error (``ops.estimate.step_error_rel``); 0 for a measured
    one. A profile estimated before that was recorded: ``ESTIMATED_DEFAULT_REL`` for the share
    not measured exactly (the estimators' typical held-out error, docs/ops.md)."""
    info = (getattr(profile, "extra", None) or {}).get("estimated")
    if not isinstance(info, dict):
        return 0.0
    if "step_error_rel" in info:
        return float(info["step_error_rel"])
    return ESTIMATED_DEFAULT_REL * (1 - float(info.get("time_fraction_measured", 0.0)))


def level_scale(level: float) -> float:
    """How much narrower a ``level`` interval is than a 95 % one (normal quantiles)."""
    return NormalDist().inv_cdf((1 + level) / 2) / NormalDist().inv_cdf(0.975)


def at_level(pt: PredictionPoint, level: float) -> PredictionPoint:
    """The simulated runs' 95 % interval rescaled to ``level`` around the prediction."""
    if level == 0.95:
        return pt
    q, p = level_scale(level), pt.throughput
    return replace(pt, ci_low=max(0.0, p - q * (p - pt.ci_low)), ci_high=p + q * (pt.ci_high - p))


def with_run_spread(pt: PredictionPoint, spread: float) -> PredictionPoint:
    """The interval for one real run also holds the real system's own run-to-run noise."""
    if spread <= 0:
        return pt
    m = pt.throughput
    return replace(pt, ci_low=min(pt.ci_low, m * (1 - spread)), ci_high=max(pt.ci_high, m * (1 + spread)))


def with_model_error(pt: PredictionPoint, margin_rel: float) -> PredictionPoint:
    """The interval for one real run with the model's error added to each side in quadrature."""
    m, p = margin_rel, pt.throughput
    if m <= 0 or not p > 0:
        return pt
    low, high = (p - pt.ci_low) / p, (pt.ci_high - p) / p
    return replace(pt, ci_low=max(0.0, p * (1 - math.hypot(low, m))),
                   ci_high=p * (1 + math.hypot(high, m)), model_error_rel=m)


def run_score(measured: float, predicted: float, low: float, high: float) -> float:
    """The margin one run needs to fall inside [low, high] widened around ``predicted``."""
    e = measured / predicted - 1
    h = (high - predicted) / predicted if e >= 0 else (predicted - low) / predicted
    return math.sqrt(max(0.0, e * e - h * h))


def conformal_margin(scores, level: float = 0.95) -> float:
    """The ⌈level·(n + 1)⌉-th smallest score; inf when there are too few runs for ``level``."""
    xs = sorted(float(s) for s in scores)
    k = math.ceil(level * (len(xs) + 1))
    return xs[k - 1] if 1 <= k <= len(xs) else math.inf


def coverage(runs, margin_rel: float) -> float:
    """The share of (measured, predicted, low, high) runs inside their widened interval."""
    runs = list(runs)
    inside = sum(run_score(*r) <= margin_rel + 1e-12 for r in runs)
    return inside / len(runs) if runs else math.nan
