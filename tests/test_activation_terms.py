"""The physical terms of GELU and the negative log-likelihood (``OpType.prior_terms``), by
hand, and rows whose times are exactly such terms recovered by the terms prior, forward and
backward each from its own terms; ReLU, whose terms were held out worse than its race of a
network with and without a roofline (docs/ops-runs.md, run 43), is the one type with a grid
and no terms."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.prior import fit_prior, prior_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")


def test_relu_is_the_one_type_with_a_grid_and_no_terms():
    assert [n for n, t in REGISTRY.items() if t.prior_terms is None] == ["relu", "other"]


def test_gelu_has_a_fixed_cost_and_an_element_cost_per_form():
    exact = {"numel": 100, "gi": 1, "approx": "none"}
    tanh = {**exact, "approx": "tanh"}
    terms = REGISTRY["gelu"].prior_terms
    assert terms(exact, "float32", 64.0) == [1, 1, 100, 92, 0, 0]
    assert terms(tanh, "float32", 64.0) == [0, 1, 100, 92, 1, 100]
    # a row stored before the form was read is the exact form (``OpType.added``)
    assert terms(REGISTRY["gelu"].complete({"numel": 100, "gi": 1}), "float32", 64.0) == terms(exact, "float32", 64.0)
    assert REGISTRY["gelu"].backward_terms(tanh, "float32", 64.0)[3] == pytest.approx(100 - 64 / 12)


def test_the_losss_forward_gathers_a_row_its_backward_writes_every_element():
    # 10 rows of 50 classes: 2,000 bytes, of which a 500-byte cache holds a quarter
    p = {"rows": 10, "cols": 50, "gi": 1}
    assert REGISTRY["nll_loss"].prior_terms(p, "float32", 500.0) == [1, 1, 10, 7.5, 0, 0]
    assert REGISTRY["nll_loss"].backward_terms(p, "float32", 500.0) == [1, 1, 10, 0, 500, 375]
    assert REGISTRY["nll_loss"].prior_terms(p, "float32", 4096.0)[3] == 0  # all of it cached


RATES = {"gelu": ([9e-6, 1e-6, 0.5e-9, 0.3e-9, 4e-6, 1.1e-9], [20e-6, 2e-6, 1e-9, 0.5e-9, 12e-6, 0.6e-9]),
         "nll_loss": ([5e-6, 1e-6, 2e-9, 20e-9, 0.0, 0.0], [9e-6, 2e-6, 3e-9, 0.0, 0.3e-9, 0.2e-9])}


def _rows(op: str, n: int, rng) -> list[OpRecord]:
    """``n`` sampled shapes of ``op`` timed exactly by its terms at ``RATES`` (1 MiB cache)."""
    t, (fwd, bwd) = REGISTRY[op], RATES[op]
    rows = []
    for _ in range(n):
        p = t.complete(t.sample(rng))
        f = float(np.dot(t.prior_terms(p, "float32", 2.0 ** 20), fwd))
        b = float(np.dot(t.backward_terms(p, "float32", 2.0 ** 20), bwd)) if p["gi"] else 0.0
        rows.append(OpRecord(DEV, op, p, "float32", f, b, 5, 0.0, 0.0, 1.0))
    return rows


@pytest.mark.parametrize("op", sorted(RATES))
def test_exact_terms_are_recovered(op):
    """Times made of the terms: the fit finds the cache size and predicts every row to the
    rounding, both directions (but the few below its floor, which it lifts to it)."""
    rows = _rows(op, 120, np.random.default_rng(11))
    prior = fit_prior(rows, has_bwd=True)
    assert prior["terms"] == op and prior["cache_bytes"] == 2.0 ** 20
    got = prior_times(op, "float32", [r.params for r in rows], prior)
    for j, want in enumerate((np.array([r.fwd_s for r in rows]), np.array([r.bwd_s for r in rows]))):
        timed = want > 0
        assert np.allclose(got[timed, j], np.maximum(want[timed], prior["floor_s"]), rtol=1e-6), j
