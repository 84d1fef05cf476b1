"""A per-image convolution timed as the matrix products it runs (``OpType.runs_as``,
``conv.as_products``): which calls, the products' shapes against the convolution's own
multiply-adds, and ``time_calls`` using the matrix product's estimator for them where conv2d's
own has no rates of that path (its prior ``merged``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator_support import EmptyDB
from sgdsim.ops.estimate import time_calls
from sgdsim.ops.estimator.features import layout_of
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.conv import as_products, macs, slow_path
from sgdsim.ops.records import Device, OpRecord, params_key

F32 = "float32"


def conv(n, cin, cout, hw, k=1, s=1, pad=0, bias=0, gi=1, groups=1) -> dict:
    return {"n": n, "cin": cin, "h": hw, "w": hw, "cout": cout, "kh": k, "kw": k, "sh": s,
            "sw": s, "ph": pad, "pw": pad, "groups": groups, "bias": bias, "gi": gi}


def test_a_pointwise_convolution_of_few_images_is_one_product_per_image():
    assert as_products(conv(2, 64, 256, 56), F32) == (
        "mm", {"m": 256, "k": 64, "n": 56 * 56, "tb": 0, "ga": 1, "gb": 1}, 2)
    assert as_products(conv(4, 3, 8, 7, gi=0), F32)[1]["gb"] == 0  # no input gradient
    assert as_products(conv(16, 64, 256, 56), F32) is None  # from 16 images: oneDNN
    assert as_products(conv(2, 64, 64, 56, k=3, pad=1), F32) is None  # oneDNN
    assert as_products(conv(2, 64, 64, 56, s=2), F32) is None  # strided: oneDNN
    assert as_products(conv(2, 64, 256, 56, bias=1), F32) is None  # a bias pass the product lacks
    assert as_products(conv(2, 64, 256, 56), "bfloat16") is None  # oneDNN in bf16
    one_small = conv(1, 16, 16, 10, k=3, pad=1)  # per image, but the input unfolded first
    assert slow_path(one_small, F32) and as_products(one_small, F32) is None


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20), st.integers(1, 96), st.integers(1, 96), st.integers(1, 40),
       st.sampled_from([1, 3]), st.sampled_from([1, 2]), st.sampled_from([0, 1]),
       st.sampled_from([0, 1]), st.sampled_from([0, 1]))
def test_the_products_do_the_convolutions_multiply_adds(n, cin, cout, hw, k, s, pad, bias, gi):
    p = conv(n, cin, cout, hw, k=k, s=s, pad=pad * (k // 2), bias=bias, gi=gi)
    got = as_products(p, F32)
    if got is None:
        return
    op, q, count = got
    assert slow_path(p, F32) and op == "mm" and count == n
    assert count * q["m"] * q["k"] * q["n"] == macs(p)
    assert set(q) == REGISTRY["mm"].required()  # a complete mm call
    assert REGISTRY["mm"].params_of(REGISTRY["mm"].build(q, F32)) == q


class Fixed:
    """An estimator whose calls take what ``fn`` says, (forward, backward) from parameters."""

    def __init__(self, op: str, fn, params: list[dict], prior=None):
        self.fn, self.prior = fn, prior
        self.layout = layout_of(params, REGISTRY[op].shape_dims)

    def predict(self, params):
        out = np.array([self.fn(p) for p in params], dtype=float)
        return out[:, 0], out[:, 1]


def mm_time(q):
    return 1e-9 * q["m"] * q["k"] * q["n"], 3e-9 * q["m"] * q["k"] * q["n"]


POINTWISE, THREE = conv(2, 64, 256, 56), conv(2, 64, 64, 56, k=3, pad=1)
PRODUCTS = [as_products(POINTWISE, F32)[1], {"m": 4096, "k": 4096, "n": 4096, "tb": 1, "ga": 0, "gb": 0}]
MM = Fixed("mm", mm_time, PRODUCTS)
CALLS = [REGISTRY["conv2d"].build(p, F32) for p in (POINTWISE, THREE)]


def conv_estimator(merged: bool) -> Fixed:
    """conv2d's own: 1 s forward, 2 s backward, its prior merged (no per-image rates) or not."""
    return Fixed("conv2d", lambda p: (1.0, 2.0), [POINTWISE, THREE], {"merged": True} if merged else {})


def test_a_per_image_convolution_is_timed_by_the_matrix_products_estimator_where_conv2d_is_merged():
    timed = time_calls(CALLS, EmptyDB(), "dev", {("conv2d", F32): conv_estimator(True), ("mm", F32): MM})
    f, b = mm_time(as_products(POINTWISE, F32)[1])
    assert (timed.fwd[0], timed.bwd[0]) == (pytest.approx(2 * f), pytest.approx(2 * b))
    assert (timed.fwd[1], timed.bwd[1]) == (1.0, 2.0)  # oneDNN's: conv2d's own estimator
    assert timed.source == ["estimated", "estimated"] and timed.ops == ["mm", "conv2d"]
    assert timed.unseen == {}


def test_where_conv2d_has_its_per_image_rates_they_time_it():
    timed = time_calls(CALLS, EmptyDB(), "dev", {("conv2d", F32): conv_estimator(False), ("mm", F32): MM})
    assert list(timed.fwd) == [1.0, 1.0] and timed.ops == ["conv2d", "conv2d"]


def test_without_a_matrix_product_estimator_the_convolutions_own_times_it():
    timed = time_calls(CALLS, EmptyDB(), "dev", {("conv2d", F32): conv_estimator(True)})
    assert list(timed.fwd) == [1.0, 1.0] and timed.ops == ["conv2d", "conv2d"]


def test_without_a_conv2d_estimator_the_products_time_it_not_the_roofline():
    timed = time_calls(CALLS[:1], EmptyDB(), "dev", {("mm", F32): MM})
    assert timed.fwd[0] == pytest.approx(2 * mm_time(as_products(POINTWISE, F32)[1])[0])
    assert timed.source == ["estimated"] and timed.roofline_types == {}


def test_a_measured_row_of_the_convolution_itself_comes_first():
    row = OpRecord(Device("dev", "cpu"), "conv2d", POINTWISE, F32, 5e-3, 7e-3)

    class OneRow(EmptyDB):
        def lookup(self, device, keys):
            return {k: row for k in keys if k == ("conv2d", params_key(POINTWISE), F32)}

    timed = time_calls(CALLS[:1], OneRow(), "dev", {("conv2d", F32): conv_estimator(True), ("mm", F32): MM})
    assert (timed.fwd[0], timed.bwd[0], timed.source[0]) == (5e-3, 7e-3, "measured")


def test_a_product_beyond_the_matrix_estimators_training_is_named_as_the_convolutions():
    wide = conv(2, 8192, 256, 56)  # k = 8192, beyond the 4096 the mm estimator saw
    timed = time_calls([REGISTRY["conv2d"].build(wide, F32)], EmptyDB(), "dev",
                       {("conv2d", F32): conv_estimator(True), ("mm", F32): MM})
    assert timed.unseen == {"conv2d as mm": ["k=8192 (trained up to 4096)"]}
