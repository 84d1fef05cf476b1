"""A reference call timed beside every row: a machine that drifts between two measurements of
a row reads the same time back from both (issue 38, item 1)."""
from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from sgdsim.ops import reference  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.measure import Precision, _differential  # noqa: E402
from sgdsim.ops.optypes import REGISTRY, SAMPLED  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402
from sgdsim.ops.retest import _values  # noqa: E402

DEV = Device("cpu (1 threads, test)", "cpu", "pytorch test", "")


def rec(numel, fwd, fwd_ref=0.0, bwd_ref=0.0, op="relu"):
    return OpRecord(DEV, op, {"numel": numel, "gi": 1}, "float32", fwd, 2 * fwd, 5, 0.01, 0.02,
                    1.0, fwd_ref_s=fwd_ref, bwd_ref_s=bwd_ref)


def test_each_row_is_rescaled_to_its_types_mean_reference():
    rows = [rec(1, 1e-6, 1e-4, 2e-4), rec(2, 3e-6, 3e-4, 2e-4), rec(3, 5e-6)]  # the last: no reference
    out = reference.steady(rows, reference.means(rows))
    # mean forward reference 2e-4: the first row ran at half the mean time, the second at 1.5x
    assert out[0].fwd_s == pytest.approx(2e-6) and out[1].fwd_s == pytest.approx(2e-6)
    assert out[0].bwd_s == pytest.approx(2e-6) and out[1].bwd_s == pytest.approx(6e-6)  # refs equal
    assert out[2] == rows[2]  # read as stored
    other = [replace(r, op="gelu") for r in rows[:1]]  # a type's mean is its own
    assert reference.steady(other, reference.means(rows + other))[0].fwd_s == pytest.approx(1e-6)


class Machine:
    """A call of ``a`` s per copy plus a fixed ``c`` s per run, and a reference of ``r`` s per
    copy, on a machine whose speed factor changes after every pair (``factors``, cycled)."""

    def __init__(self, a, c, r, factors):
        self.a, self.c, self.r, self.factors, self.i = a, c, r, factors, 0

    def timed(self, k):
        return self.factors[self.i % len(self.factors)] * (self.c + k * self.a)

    def sample(self):  # the reference, after a pair; the phase then moves on
        f = self.factors[self.i % len(self.factors)]
        self.i += 1
        return f * self.r


def _measure(machine, repeats=5):
    s = _differential(machine.timed, 8, repeats, Precision(), reference=machine)
    return float(np.median(s.per_copy)), s.reference()


def test_a_drifting_machine_reads_the_same_time_back_from_two_measurements():
    # the same call measured in a fast phase and in a slow one: medians of the factors 1.0
    # and 1.8, so as timed they disagree by 1.8x; over the reference they agree exactly
    fast, slow = Machine(1e-5, 3e-4, 2e-4, [1.0, 1.1, 0.9]), Machine(1e-5, 3e-4, 2e-4, [2.0, 1.4, 1.8])
    (t1, r1), (t2, r2) = _measure(fast), _measure(slow)
    assert t2 / t1 == pytest.approx(1.8)
    rows = [replace(rec(1, t1, r1), device=replace(DEV, name="a")),
            replace(rec(1, t2, r2), device=replace(DEV, name="a"), params={"numel": 2, "gi": 1})]
    steady = reference.steady(rows, reference.means(rows))
    assert steady[0].fwd_s == pytest.approx(steady[1].fwd_s)
    assert steady[0].fwd_s == pytest.approx(1e-5 * (1.0 + 1.8) / 2)  # the mean of the two phases


def test_the_retest_compares_rows_over_their_references():
    stored = [rec(n, 1e-5 * n, 1e-4) for n in (1, 2, 3)]
    again = {r.key: replace(r, fwd_s=1.5 * r.fwd_s, fwd_ref_s=1.5e-4) for r in stored}  # all 1.5x slower
    assert _values(stored, again)["fwd_median"] == pytest.approx(0.0)
    assert _values(stored, again, relative=False)["fwd_median"] == pytest.approx(0.5)
    mixed = {k: replace(v, fwd_ref_s=0.0) for k, v in again.items()}  # one side without: as timed
    assert _values(stored, mixed)["fwd_median"] == pytest.approx(0.5)


@pytest.mark.parametrize("op", SAMPLED)
def test_every_type_has_a_fixed_reference_near_its_target_size(op):
    p = reference.reference_params(op, "float32")
    assert p == reference.reference_params(op, "float32")  # the same on every call and machine
    size = sum(t.numel for t in REGISTRY[op].build(p, "float32").tensors())
    assert reference.REFERENCE_ELEMENTS / 64 <= size <= reference.REFERENCE_ELEMENTS * 64


def test_the_database_keeps_what_was_timed_and_reads_back_steady_times(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    rows = [rec(1, 1e-6, 1e-4, 1e-4), rec(2, 4e-6, 3e-4, 1e-4), rec(3, 5e-6)]
    with open_db(path) as db:
        db.upsert(rows)
        assert db.load(raw=True) == rows
        loaded = db.load()
        keys = [r.key[1:] for r in rows]
        looked = db.lookup(DEV.name, keys)
    assert [r.fwd_s for r in loaded] == pytest.approx([2e-6, 4e-6 * 2 / 3, 5e-6])
    # a lookup of one row still scales it by its whole type's mean (SQL's, the same value)
    with open_db(path) as db:
        one = db.lookup(DEV.name, keys[1:2])
    assert one[keys[1]].fwd_s == pytest.approx(loaded[1].fwd_s)
    assert [looked[k].fwd_s for k in keys] == pytest.approx([r.fwd_s for r in loaded])


def test_a_step_is_read_at_the_databases_mean_speed_type_by_type():
    # 60 % conv2d whose reference runs 2x slower now than its rows' mean, 30 % relu at its
    # mean, 10 % untyped: 0.6 * 0.5 + 0.3 * 1 + 0.1 * 1
    f = reference.speed_factor({"conv2d": 0.6, "relu": 0.3}, {"conv2d": 1e-3, "relu": 2e-4},
                               {"conv2d": 2e-3, "relu": 2e-4})
    assert f == pytest.approx(0.7)
    # a type with no reference in the database, or none timed now, is read as measured
    assert reference.speed_factor({"conv2d": 0.6, "mm": 0.4}, {"conv2d": 1e-3},
                                  {"conv2d": 5e-4, "mm": 1e-3}) == pytest.approx(1.6)
    # the same machine speed now as in the database: unchanged
    assert reference.speed_factor({"conv2d": 1.0}, {"conv2d": 3e-4}, {"conv2d": 3e-4}) == 1.0


def test_a_sampler_change_does_not_move_a_types_reference(monkeypatch):
    """The element-wise sampler took dropout's mask and the optimizer's update on 2026-12-04,
    and the rule's choice moved from an add to a clone, then to a pow: rows of one database
    measured before and after would have been read against different calls. The frozen
    references stay; a type without one still gets the rule's choice."""
    eltwise = REGISTRY["eltwise"]
    before = reference.reference_params("eltwise", "float32")
    assert before == {**reference.FROZEN["eltwise"], "inplace": 0}
    other = {"fn": "tanh", "numel": 2 ** 18, "bcast": 0, "gi": 0, "inplace": 0}
    monkeypatch.setitem(REGISTRY, "eltwise", dataclasses.replace(eltwise, sample=lambda rng: dict(other)))
    assert reference.reference_params("eltwise", "float32") == before
    monkeypatch.delitem(reference.FROZEN, "eltwise")
    assert reference.reference_params("eltwise", "float32") == other
