"""A roofline prior the MLP corrects (issue 38, item 3; as Habitat and NeuSight start from a
physical model): per operator type and direction, time ≈ fixed + work / rate, fitted to the
type's own rows, where work is the call's FLOPs for the FLOP-bound types and its bytes for
the others (``ops/roofline.py``). The MLP then learns log(time / prior): the part of the time
the roofline misses, which is flatter than the time itself, so the MLP has less to learn and
extrapolates beyond the grid as the roofline does.
"""
from __future__ import annotations

import math

import numpy as np

from ..optypes import REGISTRY
from ..roofline import FIXED_PERCENTILE, FLOP_BOUND, rate_per_s, work_of
from .terms import check_terms_prior, fit_terms_prior, has_terms, terms_times


def _work(op: str, dtype: str, params: list[dict]) -> np.ndarray:
    """(n, 2): forward and backward work of each parameter dict."""
    out = np.zeros((len(params), 2))
    for i, p in enumerate(params):
        w = work_of(REGISTRY[op].build(p, dtype), op, p)
        out[i] = (w.fwd_flops, w.bwd_flops) if op in FLOP_BOUND else (w.fwd_bytes, w.bwd_bytes)
    return out


def _fit_direction(work: np.ndarray, times: np.ndarray) -> list[float] | None:
    """[fixed seconds, work per second] as the device roofline fits them (``roofline.py``),
    on one type's rows; None where fewer than two have work and a time."""
    ok = (work > 0) & (times > 0)
    if ok.sum() < 2:
        return None
    fixed = float(np.percentile(times[ok], FIXED_PERCENTILE))
    rate = rate_per_s(work[ok], times[ok], fixed)  # the roofline's rate, on this type's rows
    return None if rate is None else [fixed, rate]


def fit_prior(records, has_bwd: bool) -> dict | None:
    """The type's prior from its training rows (its physical terms where its type names them,
    ``terms.py``); None if its forward has no work to go by."""
    if has_terms(records[0].op):
        return fit_terms_prior(records, has_bwd)
    params = [r.params for r in records]
    work = _work(records[0].op, records[0].dtype, params)
    fwd = _fit_direction(work[:, 0], np.array([r.fwd_s for r in records]))
    if fwd is None:
        return None
    bwd = _fit_direction(work[:, 1], np.array([0.0 if r.bwd_bound else r.bwd_s for r in records]))
    return {"fwd": fwd, "bwd": (bwd or fwd) if has_bwd else fwd}


def prior_times(op: str, dtype: str, params: list[dict], prior: dict) -> np.ndarray:
    """(n, 2) seconds per direction: a terms prior's terms at their rates (``terms.py``), or
    the roofline's fixed + work / rate."""
    if "terms" in prior:
        return terms_times(op, dtype, params, prior)
    work = _work(op, dtype, params)
    cols = [prior["fwd"], prior["bwd"]]
    return np.stack([fixed + work[:, j] / rate for j, (fixed, rate) in enumerate(cols)], axis=1)


def held_out_times(records, has_bwd: bool, fold: np.ndarray) -> np.ndarray:
    """(n, 2) seconds: each row's forward and backward as the prior fitted to the other
    folds' rows predicts them (NaN where those rows fit none)."""
    op, dtype = records[0].op, records[0].dtype
    pred = np.full((len(records), 2), np.nan)
    for k in np.unique(fold):
        fit = [r for r, f in zip(records, fold) if f != k]
        prior = fit_prior(fit, has_bwd) if len(fit) >= 2 else None
        if prior is not None:
            test = np.flatnonzero(fold == k)
            pred[test] = prior_times(op, dtype, [records[i].params for i in test], prior)
    return pred


def check_prior(value, op: str | None = None) -> dict | None:
    """A stored prior, checked as it is read (an estimator is data from someone else)."""
    if value is None:
        return None
    if isinstance(value, dict) and "terms" in value:
        return check_terms_prior(value, op)
    if not isinstance(value, dict) or set(value) != {"fwd", "bwd"}:
        raise ValueError("prior must name fwd and bwd")
    for pair in value.values():
        if (not isinstance(pair, list) or len(pair) != 2 or
                not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in pair)):
            raise ValueError("a prior is [fixed seconds, work per second], both positive")
    return {k: [float(v) for v in pair] for k, pair in value.items()}
