"""examples/ops/model_calls.py --calls: each of the models' calls of one type against the
grid's estimate, by hand on fakes."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "ops"))

from model_calls import call_rows  # noqa: E402


class _Models:
    def __init__(self, rows):
        self.rows = rows

    def load(self, op):
        return [r for r in self.rows if r.op == op]


class _Twice:  # estimates every forward at 2x its k, every backward at 3x
    def predict(self, params):
        k = np.array([p["k"] for p in params], dtype=float)
        return 2 * k, 3 * k


def _row(op, k, fwd_s, bwd_s, dtype="float32"):
    return SimpleNamespace(op=op, dtype=dtype, params={"k": k, "m": 1}, fwd_s=fwd_s, bwd_s=bwd_s)


def test_each_call_against_its_estimate_largest_backward_last():
    models = _Models([_row("addmm", 4, 4.0, 6.0), _row("addmm", 1, 1.0, 0.0),
                      _row("addmm", 2, 8.0, 2.0), _row("addmm", 9, 1.0, 1.0, "bfloat16"),
                      _row("mm", 3, 1.0, 1.0)])
    lines = call_rows(models, {("addmm", "float32"): _Twice()}, "addmm")
    body = lines[2:]
    assert len(body) == 3  # float32 addmm only
    # sorted by the backward: 0 (none timed), 2 ms, 6 ms; ratios estimate / measured
    assert body[0] == "| k=1, m=1 | 1000.000 | 2.00 | - | - |"
    assert body[1] == "| k=2, m=1 | 8000.000 | 0.50 | 2000.000 | 3.00 |"
    assert body[2] == "| k=4, m=1 | 4000.000 | 2.00 | 6000.000 | 2.00 |"


def test_a_type_without_an_estimator_says_so():
    assert call_rows(_Models([_row("mm", 3, 1.0, 1.0)]), {}, "mm") == \
        ["(no float32 mm calls with a trained estimator)"]


def test_calls_of_another_precision_against_that_precisions_estimator():
    models = _Models([_row("addmm", 4, 4.0, 6.0), _row("addmm", 9, 1.0, 1.0, "bfloat16")])
    lines = call_rows(models, {("addmm", "float32"): _Twice(), ("addmm", "bfloat16"): _Twice()},
                      "addmm", "bfloat16")
    assert lines[2:] == ["| k=9, m=1 | 1000.000 | 18.00 | 1000.000 | 27.00 |"]
    assert call_rows(models, {("addmm", "float32"): _Twice()}, "addmm", "bfloat16") == \
        ["(no bfloat16 addmm calls with a trained estimator)"]
