"""Element-wise fixed costs that belong to a kind of call, not to a function: a tensor the
call allocates (an out-of-place output, autograd's copy of an in-place target it saves) and
a Scalar overload's wrapped number (docs/ops-runs.md, run 25)."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.prior import fit_prior, prior_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.pointwise import arith_sample
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")
CACHE = 2.0 ** 20
ALLOC_S, SCALAR_S = 1.5e-6, 3.0e-6


def kinds(fn: str, gi: int, inplace: int) -> list[float]:
    """The two terms, read off the forward's terms: allocations, then the wrapped number."""
    p = {"fn": fn, "numel": 1000, "bcast": 0, "gi": gi, "inplace": inplace}
    return REGISTRY["eltwise"].prior_terms(p, "float32", CACHE)[-5:-3]


def test_the_kinds_of_call_by_hand():
    assert kinds("add", 0, 0) == [1.0, 0.0]  # a fresh output
    assert kinds("add", 0, 1) == [0.0, 0.0] == kinds("add", 1, 1)  # writes its target
    assert kinds("mul", 1, 1) == [1.0, 0.0] == kinds("div", 1, 1)  # autograd saves the target
    assert kinds("mul", 0, 1) == [0.0, 0.0]  # no gradient, nothing saved
    assert kinds("mul_scalar", 1, 0) == [1.0, 1.0] and kinds("mul_scalar", 0, 1) == [0.0, 1.0]
    assert kinds("tanh", 1, 0) == [1.0, 0.0] and kinds("bernoulli_", 0, 1) == [0.0, 0.0]
    p = {"fn": "mul_scalar", "numel": 1000, "bcast": 0, "gi": 1, "inplace": 0}
    assert REGISTRY["eltwise"].backward_terms(p, "float32", CACHE)[-5:] == [0.0] * 5


def synthetic_rows(n_rows: int, rng) -> list[OpRecord]:
    """Grid draws timed as a fixed cost, a pass per element, the function's own pass, and the
    two fixed costs: an in-place call is ALLOC_S cheaper than its out-of-place twin."""
    per_fn = {"add": 0.2e-9, "mul": 0.3e-9, "sub": 0.25e-9, "div": 0.4e-9, "mul_scalar": 0.15e-9,
              "tanh": 0.6e-9, "pow": 0.5e-9, "clone": 0.1e-9, "bernoulli_": 2.0e-9}
    rows = []
    for _ in range(n_rows):
        p = arith_sample(rng)
        n = p["numel"]
        alloc, scalar = kinds(p["fn"], p["gi"], p["inplace"])
        fwd = 3e-6 + (0.1e-9 + per_fn[p["fn"]]) * n + ALLOC_S * alloc + SCALAR_S * scalar
        rows.append(OpRecord(DEV, "eltwise", p, "float32", fwd, 0.0, 5, 0.0, 0.0, 1.0))
    return rows


def test_the_fixed_costs_are_recovered_and_only_the_kind_of_call_pays_them():
    rows = synthetic_rows(400, np.random.default_rng(7))
    prior = fit_prior(rows, has_bwd=False)
    got = prior_times("eltwise", "float32", [r.params for r in rows], prior)[:, 0]
    assert np.allclose(got, [max(r.fwd_s, prior["floor_s"]) for r in rows], rtol=1e-6)
    twin = {"fn": "add", "numel": 4096, "bcast": 0, "gi": 0}
    out, inp = prior_times("eltwise", "float32", [{**twin, "inplace": 0}, {**twin, "inplace": 1}],
                           prior)[:, 0]
    assert out - inp == pytest.approx(ALLOC_S, rel=1e-6)
    mul = {"fn": "mul", "numel": 4096, "bcast": 0, "gi": 1, "inplace": 0}
    tensor, number = prior_times("eltwise", "float32", [mul, {**mul, "fn": "mul_scalar"}], prior)[:, 0]
    assert number - tensor == pytest.approx(SCALAR_S - 0.15e-9 * 4096, rel=1e-6)
