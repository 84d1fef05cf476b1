"""The physical terms of the mean, attention and layer norm (``OpType.prior_terms``), by hand,
and a mean and an attention whose times are exactly such terms recovered by the terms prior."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.prior import fit_prior, prior_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.base import rowwise_terms
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")


def test_mean_terms_by_hand():
    # 6 rows of 4: 24 elements summed, 6 rows reduced; a 64-byte cache holds 16 of them
    p = {"numel": 24, "out": 6, "gi": 1}
    assert REGISTRY["mean"].prior_terms(p, "float32", 64.0) == [1, 1, 24, 6, 0, 8]
    # a mean over one element is a copy: its rows go to their own rate
    q = {"numel": 6, "out": 6, "gi": 0}
    assert REGISTRY["mean"].prior_terms(q, "float32", 64.0) == [1, 0, 6, 0, 6, 0]


def test_attention_terms_by_hand():
    # 2 x 3 heads, 4 queries, 5 keys of 8: 6 heads, 24 query rows, 120 scores, 960 multiply-adds;
    # query, key, value and output 6 x (2 x 4 + 2 x 5) x 8 = 864 elements, 16 of them in 64 bytes
    p = {"b": 2, "heads": 3, "lq": 4, "lk": 5, "d": 8, "causal": 0, "mask": 0, "dropout": 0, "gi": 1}
    terms = REGISTRY["sdpa"].prior_terms
    assert terms(p, "float32", 64.0) == [1, 1, 6, 24, 960, 0, 120, 0, 0, 0, 0, 848, 0, 0, 0, 0, 0]
    # causal: the products' multiply-adds at their own rate; dropout: the decomposed path's
    assert terms({**p, "causal": 1}, "float32", 64.0)[4:9] == [0, 960, 120, 0, 0]
    assert terms({**p, "dropout": 1}, "float32", 64.0)[4:9] == [0, 0, 0, 960, 120]
    # a mask is read per batch, not per head (2 x 4 x 5); a boolean one is converted as well
    assert terms({**p, "mask": 1}, "float32", 64.0)[9:11] == [40, 0]
    assert terms({**p, "mask": 2}, "float32", 64.0)[9:11] == [40, 40]
    # what a path adds per call and per (batch, head): dropout's, a mask's (either kind), causal's
    assert terms({**p, "dropout": 1}, "float32", 64.0)[12:] == [1, 0, 0, 6, 0]
    assert terms({**p, "mask": 2}, "float32", 64.0)[12:] == [0, 1, 0, 0, 6]
    assert terms({**p, "causal": 1}, "float32", 64.0)[12:] == [0, 0, 1, 0, 0]


def test_layer_norm_is_a_rowwise_reduction():
    assert REGISTRY["layer_norm"].prior_terms is rowwise_terms
    assert REGISTRY["softmax"].prior_terms is rowwise_terms
    assert rowwise_terms({"rows": 3, "cols": 10, "gi": 1}, "float32", 64.0) == [1, 1, 3, 30, 22, 3, 30]


RATES = {"mean": [4e-6, 1e-6, 0.08e-9, 7e-9, 1e-9, 0.2e-9],
         "sdpa": [20e-6, 5e-6, 1e-6, 40e-9, 0.02e-9, 0.011e-9, 1.5e-9, 0.05e-9, 6e-9, 0.5e-9, 2e-9, 0.3e-9,
                  30e-6, 8e-6, 4e-6, 2e-6, 0.5e-6]}


def _rows(op: str, n: int, rng) -> list[OpRecord]:
    """``n`` sampled shapes of ``op`` timed exactly by its terms at ``RATES`` (1 MiB cache)."""
    rows = []
    for _ in range(n):
        p = REGISTRY[op].sample(rng)
        t = float(np.dot(REGISTRY[op].prior_terms(p, "float32", 2.0 ** 20), RATES[op]))
        rows.append(OpRecord(DEV, op, p, "float32", t, 2 * t, 5, 0.0, 0.0, 1.0))
    return rows


@pytest.mark.parametrize("op", sorted(RATES))
def test_exact_terms_are_recovered(op):
    """Times made of the terms: the fit finds the cache size and predicts every row to the
    rounding (but the few below its floor, which it lifts to it)."""
    rows = _rows(op, 150, np.random.default_rng(7))
    prior = fit_prior(rows, has_bwd=True)
    assert prior["terms"] == op and prior["cache_bytes"] == 2.0 ** 20
    got = prior_times(op, "float32", [r.params for r in rows], prior)
    want = np.array([r.fwd_s for r in rows])
    assert np.allclose(got[:, 0], np.maximum(want, prior["floor_s"]), rtol=1e-6)
    assert np.allclose(got[:, 1], np.maximum(2 * want, prior["floor_s"]), rtol=1e-6)


def test_an_in_place_calls_own_costs_are_forward_only():
    """The copy, version check and saved target of an in-place call with a gradient, and the
    saved copy's allocation: forward terms only; the function's own fixed cost: the
    backward's only."""
    from sgdsim.ops.optypes.pointwise import ARITH_NAMES
    p = {"numel": 1000, "fn": "mul", "bcast": 0, "gi": 1, "inplace": 1}
    fwd = REGISTRY["eltwise"].prior_terms(p, "float32", 2.0 ** 20)
    bwd = REGISTRY["eltwise"].backward_terms(p, "float32", 2.0 ** 20)
    assert fwd[-5:] == [1, 0, 1000, 1, 1000] and bwd[-5:] == [0, 0, 0, 0, 0]
    own = len(fwd) - 6 - len(ARITH_NAMES) + ARITH_NAMES.index("mul")  # mul's fixed cost
    assert fwd[own] == 0 and bwd[own] == 1
    assert [a for i, a in enumerate(fwd[:-5]) if i != own] == [b for i, b in enumerate(bwd[:-5]) if i != own]


def test_auto_gives_a_type_with_terms_its_terms_alone():
    """``use_prior="auto"``: a type with physical terms gets them with no correction (its
    estimate is the terms prior's, through the JSON too, and one member however many are
    asked for), its validation error the terms' own held out; a roofline type still tries a
    network with and without its prior and keeps one."""
    from sgdsim.ops.estimator.ensemble import train_members
    from sgdsim.ops.estimator.model import OpEstimator, train

    rows = _rows("mean", 60, np.random.default_rng(3))
    params = [r.params for r in rows]
    est = train_members(rows, REGISTRY["mean"].shape_dims, np.random.default_rng(0), 0.5, 3,
                        use_prior="auto", clock_stop=False)
    assert isinstance(est, OpEstimator) and est.stats["arch"] == "terms" and "terms" in est.prior
    want = prior_times("mean", "float32", params, est.prior)
    for e in (est, OpEstimator.from_json(est.to_json())):
        fwd, bwd = e.predict(params)
        assert np.allclose(fwd, want[:, 0], rtol=1e-12) and np.allclose(bwd, want[:, 1], rtol=1e-12)
    assert 0.0 <= est.stats["validation_error"] < 0.08  # exact terms: the floor and thin terms off
    noisy = [OpRecord(DEV, "mean", r.params, "float32", r.fwd_s * f, r.bwd_s * f, 5, 0.0, 0.0, 1.0)
             for r, f in zip(rows, np.random.default_rng(4).lognormal(0.0, 0.3, len(rows)))]
    assert train(noisy, REGISTRY["mean"].shape_dims, np.random.default_rng(0), 0.5, use_prior="auto",
                 clock_stop=False).stats["validation_error"] > 0.15
    relu = [OpRecord(DEV, "relu", {"numel": int(n), "gi": 1}, "float32", 1e-6 + n * 2e-9, 4e-6 + n * 3e-9,
                     5, 0.0, 0.0, 1.0) for n in np.geomspace(100, 1e7, 40)]
    both = train(relu, REGISTRY["relu"].shape_dims, np.random.default_rng(0), 0.5, use_prior="auto",
                 clock_stop=False)
    assert len(both.stats["validation_errors_without_with_prior"]) == 2 and both.stats["arch"] != "terms"
