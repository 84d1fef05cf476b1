"""How far an estimator lands from held-out measurements (``ops eval``, the tests)."""
from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ..records import learnable


def evaluate(est, records) -> dict:
    """Mean and max relative |error| of forward, backward (rows where it is > 0) and their
    sum, over ``records`` (held-out measurements); and the time-weighted error of the sum,
    sum |pred - true| / sum true: what a step made of these calls would be off by."""
    records, _ = learnable(records)  # a bound is not a measurement to score against
    if not records:
        raise ConfigError("nothing to evaluate: no measurements")
    fwd, bwd = est.predict([r.params for r in records])
    tf = np.array([r.fwd_s for r in records])
    tb = np.array([0.0 if r.bwd_bound else r.bwd_s for r in records])

    def errors(pred, true):
        keep = true > 0
        e = np.abs(pred[keep] - true[keep]) / true[keep]
        return (float(e.mean()), float(e.max())) if e.size else (0.0, 0.0)

    out = {"n": len(records)}
    for name, pred, true in (("fwd", fwd, tf), ("bwd", bwd, tb), ("sum", fwd + bwd, tf + tb)):
        out[f"{name}_mean"], out[f"{name}_max"] = errors(pred, true)
    out["fwd_median"] = float(np.median(np.abs(fwd - tf) / tf))  # beside ops retest's median
    total = float((tf + tb).sum())
    out["sum_weighted"] = float(np.abs(fwd + bwd - tf - tb).sum() / total) if total > 0 else 0.0
    return out


def holdout_split(records, frac: float = 0.1, rng: np.random.Generator | None = None):
    """(training, held-out) lists: a random ``frac`` of the records held out (at least one)."""
    if rng is None:
        raise ConfigError("holdout_split needs an explicit numpy Generator (rng=...)")
    if not 0 < frac < 1 or len(records) < 2:
        raise ConfigError(f"cannot hold out {frac} of {len(records)} records")
    order = rng.permutation(len(records))
    n_test = min(max(1, int(round(frac * len(records)))), len(records) - 1)
    return [records[i] for i in order[n_test:]], [records[i] for i in order[:n_test]]
