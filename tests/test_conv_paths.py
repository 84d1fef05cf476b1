"""conv2d's two paths (``optypes/conv.slow_path``): ATen's own choice as the oracle, and each
path's terms by hand."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.terms import DEFAULT_CACHE, check_terms_prior, fit_terms_prior, terms_times
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.conv import conv_backward_terms, conv_terms, macs, slow_path
from sgdsim.ops.optypes.matmul import gemm_backward_terms, gemm_terms
from sgdsim.ops.records import Device, OpRecord

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


def _records(params, seconds):
    dev = Device("cpu (test)", "cpu")
    return [OpRecord(dev, "conv2d", p, "float32", t, 2 * t, 5, 0.0, 0.0, 1.0)
            for p, t in zip(params, seconds)]


def _grid(n_onednn: int, n_slow: int, seed: int = 1):
    """Shapes of each path, timed at 20 G multiply-adds per second plus 5 us."""
    rng = np.random.default_rng(seed)
    ps = []
    while sum(not slow_path(p, "float32") for p in ps) < n_onednn:
        p = CONV.sample(rng)
        if not slow_path(p, "float32"):
            ps.append(p)
    ps += [_p(n=int(rng.integers(1, 15)), cin=int(rng.integers(16, 512)),
              cout=int(rng.integers(16, 512)), h=int(rng.integers(7, 56))) for _ in range(n_slow)]
    return ps, [5e-6 + macs(p) / 2e10 for p in ps]


def test_a_grid_too_small_for_the_per_image_path_falls_back_to_one_set_of_terms():
    ps, ts = _grid(40, 3)  # 3 per-image rows: no rate of that path has the support it needs
    prior = fit_terms_prior(_records(ps, ts), True)
    assert prior["merged"] is True and check_terms_prior(prior, "conv2d") == prior
    assert len(prior["fwd"]) == ONEDNN_TERMS
    call = _p(n=2, cin=256, cout=256, h=28)  # a per-image call: estimated, not the floor
    want = 5e-6 + 2 * 256 * 256 * 28 * 28 / 2e10
    assert terms_times("conv2d", "float32", [call], prior)[0, 0] == pytest.approx(want, rel=0.3)


def test_a_grid_without_any_per_image_row_falls_back_to_one_set_of_terms():
    """No training row on the per-image path: the training rows alone look fine, but a 1x1
    layer (ResNet-50's at batch 8) would find every rate of its path 0 and sit at the floor."""
    ps, ts = _grid(10, 0)
    prior = fit_terms_prior(_records(ps, ts), True)
    assert prior["merged"] is True
    call = _p(n=8, cin=256, cout=64, h=56)  # ResNet-50's 1x1 at batch 8: per-image
    assert slow_path(call, "float32")
    want = 5e-6 + 8 * 256 * 64 * 56 * 56 / 2e10
    assert terms_times("conv2d", "float32", [call], prior)[0, 0] == pytest.approx(want, rel=0.3)


def test_a_grid_with_the_per_image_path_keeps_both():
    ps, ts = _grid(40, 20)
    prior = fit_terms_prior(_records(ps, ts), True)
    assert "merged" not in prior and len(prior["fwd"]) > ONEDNN_TERMS


def test_a_grid_too_small_to_cross_validate_is_still_fitted():
    """10 shapes: each fold's training rows are fewer than the terms, no cache size can be
    chosen by its held-out error; the type is fitted at the default cache, not left out."""
    ps, ts = _grid(8, 2, seed=3)
    prior = fit_terms_prior(_records(ps, ts), True)
    assert prior is not None and prior["cache_bytes"] == DEFAULT_CACHE
    got = terms_times("conv2d", "float32", ps, prior)[:, 0]
    assert np.median(np.abs(got / np.array(ts) - 1)) < 0.25  # in-sample, noise-free
