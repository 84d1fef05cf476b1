"""A mode value is taken for one with no backward only where its zeros are its own: a grid
that drew ``add`` only without a gradient said nothing of an add's backward with one
(docs/ops-runs.md, run 27)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sklearn")

from sgdsim.ops.estimator.features import layout_of  # noqa: E402
from sgdsim.ops.estimator.model import train  # noqa: E402
from sgdsim.ops.estimator.zero_backward import zero_bwd_modes  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402

DEV = Device("cpu (test)", "cpu")
FNS = ("add", "mul", "tanh", "bernoulli_")


def record(fn: str, gi: int, numel: int, bwd_s: float | None = None, inplace: int = 0) -> OpRecord:
    """A call's row: forward 3 us + 0.5 ns an element; backward twice that with a gradient,
    0 s without one (or ``bwd_s``)."""
    fwd = 3e-6 + 0.5e-9 * numel
    bwd = (2 * fwd if gi else 0.0) if bwd_s is None else bwd_s
    return OpRecord(DEV, "eltwise", {"fn": fn, "numel": numel, "bcast": 0, "gi": gi, "inplace": inplace},
                    "float32", fwd, bwd, 5, 0.0, 0.0, 1.0)


def modes_of(records) -> set:
    return set(zero_bwd_modes(records, layout_of([r.params for r in records], {"numel"})))


def test_a_function_drawn_only_without_a_gradient_keeps_its_backward():
    """g29's eltwise rows: add only with gi 0. The old rule zeroed every add's backward."""
    rows = [record(fn, gi, 1000 * (k + 1)) for k, (fn, gi) in
            enumerate([("add", 0)] * 3 + [("mul", 1)] * 4 + [("mul", 0)] + [("tanh", 1)] * 4)]
    assert modes_of(rows) == {("gi", "0")}


def test_a_function_with_no_backward_of_its_own_is_still_found():
    """A value whose zeros no other explains (a mask drawn with gi 1, no backward) stays."""
    rows = [record("bernoulli_", 1, 2000 * (k + 1), bwd_s=0.0) for k in range(3)] + \
        [record(fn, gi, 1000 * (k + 1)) for k, (fn, gi) in
         enumerate([("add", 1)] * 3 + [("mul", 0)] * 2 + [("tanh", 0), ("tanh", 1)])]
    assert modes_of(rows) == {("gi", "0"), ("fn", "bernoulli_")}


def test_of_values_with_the_same_rows_no_gradient_explains_them():
    """run 28's s36: every in-place row without a gradient, every row without one in place."""
    rows = [record(fn, gi, 1000 * (k + 1), inplace=ip) for k, (fn, gi, ip) in
            enumerate([("mul", 0, 1)] * 2 + [("add", 1, 0)] * 3 + [("tanh", 1, 0)] * 3)]
    assert modes_of(rows) == {("gi", "0")}


def test_two_values_with_the_same_rows_and_no_gradient_flag_both_stay():
    """The rows cannot tell which explains the zeros: both stay (a type with no flag drawn)."""
    rows = [record(fn, 1, 1000 * (k + 1), bwd_s=0.0 if fn == "mul" else None, inplace=ip)
            for k, (fn, ip) in enumerate([("mul", 1)] * 2 + [("add", 0)] * 3 + [("tanh", 0)] * 3)]
    assert modes_of(rows) == {("inplace", "1"), ("fn", "mul")}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FNS), st.integers(0, 1), st.booleans()),
                min_size=2, max_size=14))
def test_the_modes_kept_explain_every_zero_the_old_rule_did(drawn):
    """Against the old rule (every all-zero value) recomputed here by brute force: the kept
    values are among those, cover the same rows, none is a strict part of another, and none
    has the same rows as ``gi`` 0 kept beside it."""
    rows = [record(fn, gi, 100 * (k + 1), None if keep else 0.0)
            for k, (fn, gi, keep) in enumerate(drawn)]
    layout = layout_of([r.params for r in rows], {"numel"})
    old = {}
    for name, values in layout.modes:
        for v in values:
            idx = frozenset(i for i, r in enumerate(rows) if str(r.params[name]) == v)
            if idx and len(idx) < len(rows) and all(rows[i].bwd_s == 0 for i in idx):
                old[(name, v)] = idx
    kept = modes_of(rows)
    assert kept <= set(old)
    covered = set().union(*(old[k] for k in kept)) if kept else set()
    assert covered == set().union(*old.values()) if old else not kept
    assert not any(old[a] < old[b] for a in kept for b in kept)
    flags = {k for k in kept if k == ("gi", "0")}
    assert not any(old[k] == old[f] for f in flags for k in kept - flags)


def test_an_estimator_trained_on_such_a_grid_gives_an_add_a_backward():
    rng = np.random.default_rng(5)
    sizes = np.exp(rng.uniform(np.log(64), np.log(2 ** 22), 40)).astype(int)
    fns = [("add", 0), ("mul", 1), ("tanh", 1), ("mul", 0), ("bernoulli_", 0)]
    rows = [record(*fns[k % len(fns)], int(n)) for k, n in enumerate(sizes)]
    est = train(rows, {"numel"}, np.random.default_rng(1), budget_s=2.0, clock_stop=False,
                use_prior="auto")
    calls = [{"fn": "add", "numel": 10 ** 5, "bcast": 0, "gi": gi, "inplace": 0} for gi in (1, 0)]
    _, bwd = est.predict(calls)
    # the fixed cost every backward here has (2 x 3 us); the old rule gave exactly 0
    assert bwd[0] == pytest.approx(6e-6, rel=0.25) and bwd[1] == 0.0
