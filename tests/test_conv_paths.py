"""conv2d's two paths (``optypes/conv.slow_path``): ATen's own choice as the oracle, and each
path's terms by hand."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.conv import conv_backward_terms, conv_terms, slow_path
from sgdsim.ops.optypes.matmul import gemm_backward_terms, gemm_terms

CONV = REGISTRY["conv2d"]
ONEDNN_TERMS = 11


def _p(n=2, cin=64, cout=32, h=14, k=1, s=1, pad=0, groups=1, gi=1):
    return {"n": n, "cin": cin, "h": h, "w": h, "cout": cout, "kh": k, "kw": k, "sh": s,
            "sw": s, "ph": pad, "pw": pad, "groups": groups, "bias": 0, "gi": gi}


def test_the_rule_is_atens_choice_on_one_thread():
    torch = pytest.importorskip("torch")
    select = getattr(torch._C, "_select_conv_backend", None)
    if select is None:
        pytest.skip("this torch does not expose its convolution backend choice")
    rng = np.random.default_rng(0)
    shapes = [CONV.sample(rng) for _ in range(300)]
    shapes += [_p(n=b, cin=c, cout=o, h=h) for b in (1, 2, 4, 8, 15, 16) for c, o, h in
               ((256, 64, 56), (1024, 512, 14), (64, 64, 56))]
    shapes += [_p(n=1, cin=3, h=32, k=3, pad=1), _p(n=1, cin=3, h=32, k=5, pad=2),
               _p(n=1, cin=16, h=40, k=3, pad=1)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for p in shapes:
            x = torch.empty(p["n"], p["cin"], p["h"], p["w"])
            w = torch.empty(p["cout"], p["cin"] // p["groups"], p["kh"], p["kw"])
            got = select(x, w, None, (p["sh"], p["sw"]), (p["ph"], p["pw"]), (1, 1), False,
                         (0, 0), p["groups"], None)
            assert (got.name == "Slow2d") == slow_path(p, "float32"), (p, got)
    finally:
        torch.set_num_threads(threads)
    assert sum(slow_path(p, "float32") for p in shapes) >= 20  # both paths were tried


def test_a_per_image_product_has_the_products_terms():
    p = _p(n=3, cin=64, cout=32, h=10)  # 1x1, stride 1: one 32 x 64 by 64 x 100 product per image
    product = {"b": 3, "m": 32, "k": 64, "n": 100, "tb": 0, "ga": 1, "gb": 1}
    c = 2.0 ** 20
    assert conv_terms(p, "float32", c) == [0.0] * ONEDNN_TERMS + gemm_terms(product, "float32", c) + [0.0]
    assert conv_backward_terms(p, "float32", c) == \
        [0.0] * ONEDNN_TERMS + gemm_backward_terms(product, "float32", c) + [0.0]
    # an input that needs no gradient: the weights' product alone in the backward
    q = {**p, "gi": 0}
    assert conv_backward_terms(q, "float32", c)[ONEDNN_TERMS:-1] == \
        gemm_backward_terms({**product, "gb": 0}, "float32", c)


def test_an_unfolded_input_is_counted_on_the_per_image_path():
    # one image, 3x3 with padding: 16 x 9 = 144 deep, 8 x 8 = 64 positions, unfolded once
    p = _p(n=1, cin=16, cout=8, h=8, k=3, pad=1)
    assert slow_path(p, "float32")
    assert conv_terms(p, "float32", 2.0 ** 20)[-1] == 144 * 64
    assert conv_terms(p, "float32", 2.0 ** 20)[ONEDNN_TERMS + 2] == 8 * 144 * 64  # multiply-adds


def test_onednn_rows_and_other_precisions_keep_onednns_terms():
    c = 2.0 ** 20
    for p, dtype in ((_p(n=16), "float32"), (_p(s=2), "float32"), (_p(k=3, pad=1), "float32"),
                     (_p(), "bfloat16")):
        assert not slow_path(p, dtype)
        t = conv_terms(p, dtype, c)
        assert any(t[:ONEDNN_TERMS]) and not any(t[ONEDNN_TERMS:])
        assert conv_backward_terms(p, dtype, c) == t
