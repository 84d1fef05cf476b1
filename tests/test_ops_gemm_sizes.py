"""The grid's matrix products: sizes spread evenly over the decades of multiply-adds, up to a
transformer's layers, with the widths' alignment kept (``optypes/matmul._mkn``)."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.base import align, aligned_int
from sgdsim.ops.optypes.matmul import DIM_MAX, MAX_MACS_2D, MIN_MACS_2D


def _products(op: str, n: int, seed: int = 7) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [REGISTRY[op].sample(rng) for _ in range(n)]


def _regular(ps):  # not the vocabulary heads, which have their own draw
    return [p for p in ps if p["n"] < 8192]


@pytest.mark.parametrize("op", ["addmm", "mm"])
def test_sizes_spread_evenly_over_the_decades(op):
    ps = _regular(_products(op, 3000))
    macs = np.array([p["m"] * p["k"] * p["n"] for p in ps], dtype=float)
    decades = np.log10(MAX_MACS_2D / MIN_MACS_2D)  # 5: each holds a fifth of the draws
    for lo in range(4, 9):
        share = float(np.mean((macs >= 10.0 ** lo) & (macs < 10.0 ** (lo + 1))))
        assert share == pytest.approx(1 / decades, abs=0.04), lo
    # alignment rounds a dimension by at most half a multiple: the size by a few percent
    assert macs.max() <= 1.2 * MAX_MACS_2D and macs.min() >= MIN_MACS_2D / 2


def test_the_grid_reaches_a_transformers_layers():
    # BERT's feed-forward at 4 x 64 positions is 256 x 768 x 3072: large in every dimension
    ps = _regular(_products("addmm", 2000))
    big = [p for p in ps if min(p["m"], p["k"], p["n"]) >= 128 and p["m"] * p["k"] * p["n"] >= 1e8]
    assert len(big) >= 0.1 * len(ps)


def test_dimensions_stay_in_range():
    # alignment and the vocabulary heads: test_ops_trace.py
    for p in _regular(_products("addmm", 2000) + _products("mm", 2000)):
        assert 1 <= p["m"] <= DIM_MAX and 8 <= p["k"] <= DIM_MAX and 8 <= p["n"] <= DIM_MAX


def test_the_same_seed_draws_the_same_grid():
    assert _products("addmm", 50, seed=3) == _products("addmm", 50, seed=3)
    assert _products("addmm", 50, seed=3) != _products("addmm", 50, seed=4)


def test_align_rounds_as_aligned_int_does():
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    drawn = [aligned_int(a, 8, 4096) for _ in range(200)]
    again = []
    for _ in range(200):
        v = int(round(float(np.exp(b.uniform(np.log(8), np.log(4096))))))
        again.append(align(b, v, 4096))
    assert drawn == again
