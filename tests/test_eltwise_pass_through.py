"""An add's or a copy's backward hands the gradient on as it is: no share in the per-element
pass the other functions' backwards make, only a rate of its own (docs/ops-runs.md, run 27)."""
from __future__ import annotations

import numpy as np

from sgdsim.ops.estimator.prior import fit_prior, prior_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.pointwise import ARITH_NAMES, PASS_THROUGH
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")
CACHE = 2.0 ** 20
PASS_S = 15e-6  # what the grids' rows of add and clone take backward, at 10 elements or 50 M


def bwd_terms(fn: str, numel: int, bcast: int = 0, inplace: int = 0) -> np.ndarray:
    p = {"fn": fn, "numel": numel, "bcast": bcast, "gi": 1, "inplace": inplace}
    return np.array(REGISTRY["eltwise"].backward_terms(p, "float32", CACHE))


def own_term(fn: str) -> int:
    """The index of the function's own per-element term (after the fixed cost, the gradient's
    bookkeeping and the shared pass)."""
    return 3 + ARITH_NAMES.index(fn)


def test_a_pass_through_grows_only_in_its_own_term():
    for fn in PASS_THROUGH:
        for inplace in (0, 1):
            small, large = bwd_terms(fn, 10, 0, inplace), bwd_terms(fn, 10 ** 8, 0, inplace)
            grew = np.flatnonzero(small != large)
            assert grew.tolist() == [own_term(fn)], (fn, inplace, grew)


def test_every_other_backward_shares_the_pass():
    shared = 2
    for fn in ARITH_NAMES:
        assert bwd_terms(fn, 10 ** 6, bcast=1)[shared] == 10 ** 6  # a broadcast add sums
        if fn not in PASS_THROUGH:
            grew = np.flatnonzero(bwd_terms(fn, 10) != bwd_terms(fn, 10 ** 8))
            assert shared in grew and own_term(fn) in grew


def rows(per_fn_counts: dict[str, int], rng) -> list[OpRecord]:
    """A small grid's rows with a gradient: each function but the pass-throughs takes a fixed
    cost and a pass per element backward; add and clone take PASS_S at any size."""
    per_el = {"mul": 0.6e-9, "sub": 0.4e-9, "div": 0.9e-9, "mul_scalar": 0.3e-9,
              "tanh": 0.8e-9, "pow": 1.2e-9}
    out = []
    for fn, count in per_fn_counts.items():
        for n in np.exp(rng.uniform(np.log(64), np.log(2 ** 23), count)).astype(int):
            p = {"fn": fn, "numel": int(n), "bcast": 0, "gi": 1, "inplace": 0}
            bwd = PASS_S if fn in PASS_THROUGH else 5e-6 + (0.2e-9 + per_el[fn]) * n
            out.append(OpRecord(DEV, "eltwise", p, "float32", 4e-6 + 0.3e-9 * n, bwd, 5,
                                0.0, 0.0, 1.0))
    return out


def test_a_large_copy_is_not_charged_the_others_pass_when_the_grid_had_one_copy():
    """The README's 30-shape grid draws about 2 copies and 2 adds with a gradient: below the 3
    rows a rate needs. A GPT-2 copy of 12.7 M elements then took the pass every other
    function shares, 8.9 ms for a 15 us call (run 26)."""
    grid = rows({"mul": 5, "sub": 5, "div": 5, "mul_scalar": 5, "tanh": 5, "pow": 5,
                 "clone": 1, "add": 1}, np.random.default_rng(3))
    prior = fit_prior(grid, has_bwd=True)
    calls = [{"fn": fn, "numel": 12_664_764, "bcast": 0, "gi": 1, "inplace": ip}
             for fn, ip in (("clone", 0), ("add", 0), ("add", 1))]
    bwd = prior_times("eltwise", "float32", calls, prior)[:, 1]
    assert np.all(bwd < 2 * PASS_S), bwd
    mul = prior_times("eltwise", "float32", [{**calls[0], "fn": "mul"}], prior)[0, 1]
    assert mul > 100 * PASS_S  # the others still pay their pass
