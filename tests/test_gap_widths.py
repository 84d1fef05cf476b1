"""Run 56's products of widths no grid draws (examples/ops/gap_widths.py) and the comparison
that judges the wide-output rate's threshold on them (docs/validation/ops/run56/gap_errors.py)."""
from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "ops"))
pytest.importorskip("torch")

import gap_widths  # noqa: E402
from sgdsim.ops.optypes import matmul, optype, type_rng  # noqa: E402


def _gap_errors():
    spec = importlib.util.spec_from_file_location(
        "gap_errors", os.path.join(ROOT, "docs", "validation", "ops", "run56", "gap_errors.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_widths_fall_in_the_bands_half_of_them_in_the_gap():
    calls = gap_widths.gap_calls(200, 5)
    for name in gap_widths.TYPES:
        ps = [p for n, p, _ in calls if n == name]
        assert len(ps) == 200 and len({tuple(sorted(p.items())) for p in ps}) == 200
        widths = np.array([p["n"] for p in ps])
        assert all(any(lo <= w <= hi for lo, hi in gap_widths.BANDS) for w in widths)
        inside = np.mean((widths >= 4097) & (widths <= 8191))
        assert 0.36 < inside < 0.64  # a share of 0.5 drawn 200 times: 4 standard deviations
        assert max(p["m"] * p["k"] * p["n"] for p in ps) <= gap_widths.MAX_MACS
        assert {frozenset(p) for p in ps} == {frozenset(optype(name).sample(type_rng(0, name)))}


def test_the_two_thresholds_differ_only_on_the_gap_widths():
    """Trained on rows of a grid (none 4,097-8,191 wide), the rate from 4,097 and the rate
    from 8,192 predict a 2,048- and a 12,000-wide product alike and a 6,000-wide one not; the
    threshold the module had is put back."""
    gap_errors, rng = _gap_errors(), np.random.default_rng(1)
    train = []
    for _ in range(60):
        p = {**optype("addmm").sample(rng)}
        macs = p["m"] * p["k"] * p["n"]
        fwd = 2e-6 + macs / 5e10 * (1.3 if p["n"] > 4096 else 1.0)
        train.append(_record(p, fwd))
    test = [_record({**train[0].params, "n": n}, 1e-3) for n in (2048, 6000, 12000)]
    before = matmul.WIDE_N
    a = gap_errors.errors(train, test, 4096)
    b = gap_errors.errors(train, test, 8191)
    assert matmul.WIDE_N == before
    assert a[0, 0] == b[0, 0] and a[2, 0] == b[2, 0]
    assert a[1, 0] > b[1, 0]  # the wide rate adds time: the estimate from 4,097 is the larger


def _record(params, fwd_s):
    from sgdsim.ops.records import Device, OpRecord
    return OpRecord(device=Device("cpu", "test"), op="addmm", params=params, dtype="float32",
                    fwd_s=fwd_s, bwd_s=2 * fwd_s, samples=5)
