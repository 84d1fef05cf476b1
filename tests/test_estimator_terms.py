"""A prior made of physical terms (``ops/estimator/terms.py``): its NNLS against SciPy's, an
element-wise operator whose time is exactly such terms recovered to the rounding with the right
cache size, and the prior travelling with the estimator's JSON, a bad one refused."""
from __future__ import annotations

import json
import signal

import numpy as np
import pytest

from sgdsim.errors import ConfigError
from sgdsim.ops.estimator.model import OpEstimator, train
from sgdsim.ops.estimator.prior import check_prior, fit_prior, prior_times
from sgdsim.ops.estimator.terms import (CACHE_GRID, FLOOR_PERCENTILES, MIN_SUPPORT, fit_rates, nnls,
                                        term_matrix)
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.optypes.matmul import TILE_N
from sgdsim.ops.optypes.pointwise import ARITH, INPLACE_FNS, MASKS, PASS_THROUGH
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (test)", "cpu")
CACHE = 2.0 ** 20
PER_FN = {"add": 0.2e-9, "mul": 0.3e-9, "sub": 0.25e-9, "div": 0.4e-9, "mul_scalar": 0.15e-9,
          "tanh": 0.6e-9, "pow": 0.5e-9, "clone": 0.1e-9, "bernoulli_": 2.0e-9}


def eltwise_time(p, rates=(3e-6, 2e-6, 0.1e-9), beyond_s=0.3e-9, fresh_s=1.2e-9,
                 shared: bool = True) -> float:
    """A fixed cost, autograd's, a base and a per-function cost per element, more per
    element beyond a 1 MiB cache (inputs and output, 4 bytes each; in place, the output is an
    input), and an out-of-place output's fresh memory. ``shared`` False: the function's own
    cost per element alone (a pass-through's backward)."""
    n, inplace = p["numel"], p["inplace"]
    tensors = ARITH[p["fn"]][1] + 1 - inplace
    base, beyond_s, fresh_s = (rates[2], beyond_s, fresh_s) if shared else (0.0, 0.0, 0.0)
    return (rates[0] + rates[1] * p["gi"] + (base + PER_FN[p["fn"]]) * n
            + beyond_s * max(0.0, n - CACHE / (4 * tensors)) + fresh_s * n * (1 - inplace))


def eltwise_rows(n_rows: int, rng) -> list[OpRecord]:
    rows = []
    for _ in range(n_rows):
        fn = str(rng.choice(sorted(ARITH)))
        p = {"fn": fn, "numel": int(np.exp(rng.uniform(np.log(64), np.log(4e6)))),
             "bcast": 0, "gi": int(rng.random() < 0.7),
             "inplace": int(fn in INPLACE_FNS and rng.random() < 0.5)}
        if fn in MASKS:  # as the grid draws dropout's mask: in place, no gradient
            p.update(gi=0, inplace=1)
        t = eltwise_time(p)
        b = 2 * eltwise_time(p, shared=fn not in PASS_THROUGH) if p["gi"] else 0.0
        rows.append(OpRecord(DEV, "eltwise", p, "float32", t, b, 5, 0.0, 0.0, 1.0))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_nnls_agrees_with_scipy(seed):
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((20, 6)) * np.exp(rng.uniform(-3, 3, 6))  # columns of any size
    b = rng.standard_normal(20)
    want, _ = optimize.nnls(A, b)
    got = nnls(A, b)
    assert np.all(got >= 0)
    assert np.linalg.norm(A @ got - b) == pytest.approx(np.linalg.norm(A @ want - b), rel=1e-9, abs=1e-12)


def nearly_collinear(seed: int):
    """Columns that are mostly two shared directions, of very different sizes: the terms of a
    prior look like this (a pass per element and one per window element grow together)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    m = int(rng.integers(n + 2, 60))
    base = np.abs(rng.standard_normal((m, 2)))
    A = np.abs(base @ np.abs(rng.standard_normal((2, n))) + 0.05 * np.abs(rng.standard_normal((m, n))))
    A *= np.exp(rng.uniform(-4, 4, n))
    return A, A @ np.abs(rng.standard_normal(n)) * (1 + 0.2 * rng.standard_normal(m))


@pytest.mark.parametrize("seed", [164, 2672, 2721, 0, 1, 2])
def test_nnls_ends_when_a_rate_steps_back_to_zero(seed):
    """Seeds 164, 2672 and 2721 left a rate at 1e-16 instead of 0 when the active set stepped
    back, and the solver looped forever (as max_pool2d's terms did in training): it must
    end, at SciPy's optimum."""
    optimize = pytest.importorskip("scipy.optimize")
    A, b = nearly_collinear(seed)

    def hung(*_):
        raise TimeoutError("nnls did not end within 5 s")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        got = nnls(A, b)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    want, _ = optimize.nnls(A, b)
    assert np.all(got >= 0)
    assert np.linalg.norm(A @ got - b) <= np.linalg.norm(A @ want - b) * (1 + 1e-7) + 1e-12


def test_nnls_by_hand_and_a_zero_column():
    # min over x >= 0 of (x1 - 1)² + (x2 + 1)² + (x1 + x2 - 0.5)²: x2 = 0, x1 = 0.75
    A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    assert np.allclose(nnls(A, np.array([1.0, -1.0, 0.5])), [0.75, 0.0, 0.0])


def test_a_term_too_few_rows_stand_on_gets_no_rate():
    # times = 1e-6 + 2e-9 per element, exactly; a third term (the part of a tensor beyond the
    # cache, say) is non-zero in k rows, where the time is 3x: with k < MIN_SUPPORT that rate
    # would be fitted to those rows alone, so it is 0; from MIN_SUPPORT rows on it is fitted
    # (noise-free: exactly the 2e-5 per unit that makes those rows 3x)
    rng = np.random.default_rng(0)
    n = 40
    elems = rng.uniform(1e3, 1e5, n)
    for k, fitted in ((MIN_SUPPORT - 1, False), (MIN_SUPPORT, True)):
        beyond = np.zeros(n)
        beyond[:k] = 1.0
        X = np.stack([np.ones(n), elems, beyond * (2e-6 + 4e-9 * elems) / 2e-5], axis=1)
        t = 1e-6 + 2e-9 * elems + beyond * (2e-6 + 4e-9 * elems)
        rates = fit_rates(X, t)
        if fitted:
            assert np.allclose(rates, [1e-6, 2e-9, 2e-5], rtol=1e-6)
        else:
            assert rates[2] == 0.0
            assert rates[1] == pytest.approx(2e-9, rel=0.05)  # the k rows pull the fixed cost


def test_exact_terms_are_recovered_with_their_cache_size():
    rows = eltwise_rows(120, np.random.default_rng(0))
    prior = fit_prior(rows, has_bwd=True)
    assert prior["terms"] == "eltwise" and prior["cache_bytes"] == CACHE and CACHE in CACHE_GRID
    params = [r.params for r in rows]
    got = prior_times("eltwise", "float32", params, prior)
    want = np.array([r.fwd_s for r in rows])
    assert np.allclose(got[:, 0], np.maximum(want, prior["floor_s"]), rtol=1e-6)
    gi = np.array([p["gi"] for p in params]) == 1
    bwd = np.array([r.bwd_s for r in rows])
    assert np.allclose(got[gi, 1], np.maximum(bwd[gi], prior["floor_s"]), rtol=1e-6)
    assert term_matrix("eltwise", "float32", params[:1], CACHE).shape == (1, 12 + 2 * len(ARITH))
    assert any(p["inplace"] for p in params) and not all(p["inplace"] for p in params)


def test_exact_terms_are_not_lifted_by_a_high_floor():
    """Times the terms explain exactly: the cross-validation keeps the low floor, so the
    smallest calls are not raised to the 10th percentile of the times (bmm's 5 us calls were
    estimated at 9-10 us that way)."""
    rows = eltwise_rows(120, np.random.default_rng(3))
    fwd = np.array([r.fwd_s for r in rows])
    prior = fit_prior(rows, has_bwd=True)
    assert prior["floor_s"] == pytest.approx(np.percentile(fwd, min(FLOOR_PERCENTILES)))
    got = prior_times("eltwise", "float32", [r.params for r in rows], prior)[:, 0]
    assert np.mean(np.isclose(got, fwd, rtol=1e-6)) >= 0.98


def test_types_without_terms_keep_the_roofline():
    rows = [OpRecord(DEV, "relu", {"numel": n, "gi": 1}, "float32", 1e-6 + n * 2e-9, 4e-6, 5, 0.0, 0.0, 1.0)
            for n in (100, 1000, 10000, 100000)]
    prior = fit_prior(rows, has_bwd=True)
    assert set(prior) == {"fwd", "bwd"} and len(prior["fwd"]) == 2
    assert REGISTRY["relu"].prior_terms is None and REGISTRY["eltwise"].prior_terms is not None


def test_the_terms_prior_travels_with_the_json_and_a_bad_one_is_refused():
    rows = eltwise_rows(60, np.random.default_rng(1))
    est = train(rows, REGISTRY["eltwise"].shape_dims, np.random.default_rng(2), 1.0, use_prior=True,
                clock_stop=False)
    assert est.prior["terms"] == "eltwise"
    again = OpEstimator.from_json(est.to_json())
    params = [r.params for r in rows[:5]]
    assert np.allclose(again.predict(params), est.predict(params), rtol=1e-12)
    d = json.loads(est.to_json())
    for bad, match in ((dict(d["prior"], terms="relu"), "a terms prior of 'relu'"),
                       (dict(d["prior"], fwd=[-1.0] * len(d["prior"]["fwd"])), "each ≥ 0"),
                       (dict(d["prior"], bwd=[1.0]), "the same length"),
                       (dict(d["prior"], cache_bytes=0), "cache_bytes must be positive"),
                       (dict(d["prior"], unfitted=[len(d["prior"]["fwd"])]), "unfitted lists term indices")):
        with pytest.raises(ConfigError, match=match):
            OpEstimator.from_json(json.dumps(dict(d, prior=bad)))
    short = check_prior(dict(d["prior"], fwd=[1.0], bwd=[1.0], unfitted=[], bwd_unfitted=[]), "eltwise")
    with pytest.raises(ConfigError, match=r"has 1 terms, this sgdsim computes \d+: train it again"):
        prior_times("eltwise", "float32", params, short)


def test_gemm_terms_by_hand():
    # m=2, k=3, n=4 with a 32-byte cache (8 float32 elements): A 6 fits, B 12 is 4 beyond, C 8
    # fits; 4 columns are narrower than a tile (A's 6 elements again), 2 rows are thin (B's 12)
    p = {"m": 2, "k": 3, "n": 4, "tb": 1, "ga": 0, "gb": 1}
    assert REGISTRY["mm"].prior_terms(p, "float32", 32.0) == [1, 1, 24, 8, 6, 12, 12, 6, 0, 12, 0, 0, 0, 4, 0, 0, 0]
    # a batch of two, no transposed view, no gradient: every per-element term doubles, and the
    # batch's operands together exceed the cache (A 12 - 8, B 24 - 8, C 16 - 8); one set-up
    # for the second item
    q = {"b": 2, "m": 2, "k": 3, "n": 4, "ga": 0, "gb": 0}
    assert REGISTRY["bmm"].prior_terms(q, "float32", 32.0) == [1, 0, 48, 16, 12, 24, 0, 12, 0, 24, 0, 1, 4, 16, 8, 0, 0]
    # bfloat16 halves the bytes: 16 elements fit, so B (12) does too
    assert REGISTRY["mm"].prior_terms(p, "bfloat16", 32.0)[-5:-2] == [0, 0, 0]
    # the backward: A needs no gradient; B, a transposed view, gets its gradient in its own
    # layout: dC^T @ A, 4 rows 2 deep 3 wide (a few rows, narrow; its output, 12 elements, is 4
    # beyond the cache)
    grad_b = [1, 1, 24, 12, 8, 6, 0, 8, 0, 0, 6, 0, 0, 0, 4, 0, 0]
    assert REGISTRY["mm"].backward_terms(p, "float32", 32.0) == grad_b
    # both gradients: the two products' terms summed; dC @ B^T reads B^T in B's own order
    both = REGISTRY["mm"].backward_terms(dict(p, ga=1), "float32", 32.0)
    grad_a = REGISTRY["mm"].prior_terms({"m": 2, "k": 4, "n": 3, "tb": 0, "ga": 1}, "float32", 32.0)
    assert both == [x + y for x, y in zip(grad_a, grad_b)]
    # B not a view: its gradient is A^T @ dC, 3 rows 2 deep 4 wide (thin, narrow; its output,
    # 12 elements, is 4 beyond the cache)
    assert REGISTRY["mm"].backward_terms(dict(p, tb=0), "float32", 32.0) == \
        [1, 1, 24, 12, 6, 8, 0, 6, 0, 8, 0, 0, 0, 0, 4, 0, 0]
    # nothing needs a gradient: no backward
    assert not any(REGISTRY["mm"].backward_terms(dict(p, gb=0), "float32", 32.0))


def test_a_second_level_counts_the_operands_together_past_memory_bytes():
    """A, B and C each 4 MiB of float32 (1,024 x 1,024): 12 MiB together, 4 MiB beyond the
    8 MiB level, whatever the chosen cache; a batch of two doubles it; half as wide fits."""
    from sgdsim.ops.optypes.matmul import MEMORY_BYTES

    def beyond(b, side, cache):
        return REGISTRY["bmm"].prior_terms({"b": b, "m": side, "k": side, "n": side, "ga": 1, "gb": 1},
                                           "float32", cache)[-2]
    assert MEMORY_BYTES == 8 * 2 ** 20
    assert beyond(1, 1024, 32.0) == beyond(1, 1024, 1e12) == 2 ** 20  # 4 MiB of 4-byte elements
    assert beyond(2, 1024, 32.0) == 3 * 2 ** 20 * 2 - 2 * 2 ** 20
    assert beyond(1, 512, 32.0) == 0.0


def test_outputs_wider_than_wide_n_count_their_multiply_adds_again():
    from sgdsim.ops.optypes.matmul import WIDE_N

    def wide(n):
        return REGISTRY["mm"].prior_terms({"m": 8, "k": 32, "n": n, "tb": 1, "ga": 1, "gb": 1}, "float32", 1e12)[-1]
    assert wide(WIDE_N) == 0.0 and wide(WIDE_N + 1) == 8 * 32 * (WIDE_N + 1)
    # the backward's products: A's gradient is m x k out (narrow), the weight's n x k (dC^T @ A)
    assert REGISTRY["mm"].backward_terms({"m": 8, "k": 32, "n": 50257, "tb": 1, "ga": 1, "gb": 1},
                                         "float32", 1e12)[-1] == 0.0


def test_gemm_tile_terms_switch_at_the_tile_width():
    """Narrow below TILE_N columns, a partial tile above it unless a multiple, thin at 2-3 rows."""
    def tiles(m, n):
        t = REGISTRY["mm"].prior_terms({"m": m, "k": 5, "n": n, "tb": 0, "ga": 1, "gb": 1}, "float32", 1e9)
        return t[7:10]
    assert tiles(8, TILE_N - 1) == [40, 0, 0]
    assert tiles(8, TILE_N) == [0, 0, 0] and tiles(8, 3 * TILE_N) == [0, 0, 0]
    assert tiles(8, TILE_N + 1) == [0, 40, 0]
    assert tiles(1, 64) == [0, 0, 0] and tiles(3, 64) == [0, 0, 320] and tiles(4, 64) == [0, 0, 0]


def test_a_few_rows_pack_b_for_themselves():
    """4 to 15 rows: B's elements again (the 2-3 row term, one tile further); 16 rows: not."""
    def few(m):
        return REGISTRY["mm"].prior_terms({"m": m, "k": 5, "n": 64, "tb": 0, "ga": 1, "gb": 1}, "float32", 1e9)[9:11]
    assert few(3) == [320, 0] and few(4) == [0, 320] and few(TILE_N - 1) == [0, 320]
    assert few(TILE_N) == [0, 0]


def test_a_direction_the_prior_explains_is_left_uncorrected():
    """Forward times the terms explain exactly, backward times with a wiggle they cannot: the
    prior alone scores lower on the forward's validation rows than any fitted correction, so
    the forward is the prior's to the rounding, while the backward keeps its correction."""
    rows = []
    for r in eltwise_rows(180, np.random.default_rng(4)):
        wiggle = 1.0 + 0.4 * np.sin(np.log(r.params["numel"]))
        rows.append(OpRecord(DEV, "eltwise", r.params, "float32", r.fwd_s, 2 * r.fwd_s * wiggle, 5,
                             0.0, 0.0, 1.0))
    rows = [r for r in rows if r.params["gi"]]
    est = train(rows, REGISTRY["eltwise"].shape_dims, np.random.default_rng(5), 1.0, use_prior=True,
                clock_stop=False)
    assert est.stats["prior_alone"] == ["fwd"]
    params = [r.params for r in rows]
    fwd, bwd = est.predict(params)
    assert np.allclose(fwd, prior_times("eltwise", "float32", params, est.prior)[:, 0], rtol=1e-9)
    assert not np.allclose(bwd, prior_times("eltwise", "float32", params, est.prior)[:, 1], rtol=1e-3)
    again = OpEstimator.from_json(est.to_json())
    assert np.allclose(again.predict(params)[0], fwd, rtol=1e-12)


def test_exact_gemm_terms_are_recovered_with_their_cache_size():
    """A product with few rows streams B from memory: times made of the terms, B's bytes beyond
    a 1 MiB cache costing more, are recovered to the rounding and the cache size found; the
    backward's times, made of its own products' terms, too."""
    rng = np.random.default_rng(1)
    rates = np.array([4e-6, 1e-6, 8e-12, 5e-11, 2e-10, 1e-10, 5e-11, 6e-10, 3e-10, 4e-10,
                      2.5e-10, 1e-6, 3e-10, 7e-10, 2e-10, 1.5e-10, 4e-12])
    rows = []
    for _ in range(120):
        p = {k: int(np.exp(rng.uniform(0, np.log(4096)))) for k in "mkn"}
        p |= {"tb": int(rng.random() < 0.5), "ga": int(rng.random() < 0.8), "gb": 1}
        t = float(np.dot(REGISTRY["mm"].prior_terms(p, "float32", CACHE), rates))
        tb = float(np.dot(REGISTRY["mm"].backward_terms(p, "float32", CACHE), 1.5 * rates))
        rows.append(OpRecord(DEV, "mm", p, "float32", t, tb, 5, 0.0, 0.0, 1.0))
    prior = fit_prior(rows, has_bwd=True)
    assert prior["terms"] == "mm" and prior["cache_bytes"] == CACHE
    got = prior_times("mm", "float32", [r.params for r in rows], prior)
    for j, want in enumerate((np.array([r.fwd_s for r in rows]), np.array([r.bwd_s for r in rows]))):
        assert np.allclose(got[:, j], np.maximum(want, prior["floor_s"]), rtol=1e-6)


def test_pool_terms_by_hand():
    # 2 planes of 4 x 4, 2 x 2 windows with stride 2: 32 elements in, 8 out, 8 windows of 4;
    # a 64-byte cache holds 16 float32 elements of the 40
    p = {"n": 1, "c": 2, "h": 4, "w": 4, "k": 2, "s": 2, "p": 0, "gi": 1}
    # (max pooling's window step in two bands: 160 bytes are within 8 x 64 of the cache)
    assert REGISTRY["max_pool2d"].prior_terms(p, "float32", 64.0) == [1, 1, 32, 8, 32, 24, 32, 0]
    # 3 x 3 windows padded by 1: still 2 x 2 out per plane, 9 elements a window
    q = {**p, "k": 3, "p": 1, "gi": 0}
    assert REGISTRY["avg_pool2d"].prior_terms(q, "float32", 64.0) == [1, 0, 32, 8, 72, 24, 72]
    # the window's reads again only past the cache: a step, 0 while the 40 elements fit
    assert REGISTRY["max_pool2d"].prior_terms(p, "float32", 160.0)[-3:] == [0, 0, 0]
    assert REGISTRY["max_pool2d"].prior_terms(p, "float32", 156.0)[-3:] == [1, 32, 0]
    assert REGISTRY["avg_pool2d"].prior_terms(p, "float32", 156.0)[-2:] == [1, 32]
    # past 8 times the cache (160 bytes > 8 x 16) the step moves to the second band
    assert REGISTRY["max_pool2d"].prior_terms(p, "float32", 20.0)[-3:] == [35, 32, 0]
    assert REGISTRY["max_pool2d"].prior_terms(p, "float32", 16.0)[-3:] == [36, 0, 32]


def test_softmax_terms_by_hand():
    # 3 rows of 10 float32 (40 bytes: shorter than a 64-byte vector), a 64-byte cache holding
    # 8 elements of each of input and output: 30 - 8 = 22 beyond it
    p = {"rows": 3, "cols": 10, "gi": 1}
    assert REGISTRY["softmax"].prior_terms(p, "float32", 64.0) == [1, 1, 3, 30, 22, 3, 30]
    # 16 float32 fill a vector: no scalar path; 16 bfloat16 do not
    q = {"rows": 3, "cols": 16, "gi": 0}
    assert REGISTRY["log_softmax"].prior_terms(q, "float32", 2.0 ** 20)[-2:] == [0, 0]
    assert REGISTRY["log_softmax"].prior_terms(q, "bfloat16", 2.0 ** 20)[-2:] == [3, 48]


def test_eltwise_fixed_costs_per_broadcast_and_function():
    # before the last six terms, 1 + len(ARITH): a broadcast's fixed cost, then one per
    # function, the backward's alone (every forward is one kernel through one iterator)
    fns = sorted(ARITH)
    t = REGISTRY["eltwise"]
    p = {"numel": 10, "fn": "tanh", "bcast": 1, "gi": 0, "inplace": 0}
    assert t.prior_terms(p, "float32", CACHE)[-(7 + len(fns)):-6] == [1.0] + [0.0] * len(fns)
    assert t.backward_terms(p, "float32", CACHE)[-(7 + len(fns)):-6] == [1.0] + [float(f == "tanh") for f in fns]
    q = {**p, "fn": "add", "bcast": 0}
    assert t.backward_terms(q, "float32", CACHE)[-(7 + len(fns)):-6] == [0.0] + [float(f == "add") for f in fns]


def test_an_out_of_place_output_is_fresh_memory_an_in_place_one_is_not():
    """The sixth term from the end: an out-of-place call's output elements; in place, none,
    and one tensor fewer to hold in cache (the output is the first input). The fifth: the
    tensors it allocates, the output or autograd's saved copy of an in-place target. The last
    three: an in-place call on a tensor that needs a gradient, per element and once, and per
    element again where autograd saves the target's old values (mul_ and div_, not add_)."""
    terms = REGISTRY["eltwise"].prior_terms
    big = 2 ** 20  # 4 MiB a tensor: beyond the 1 MiB cache either way
    out = terms({"numel": big, "fn": "add", "bcast": 0, "gi": 0, "inplace": 0}, "float32", CACHE)
    inp = terms({"numel": big, "fn": "add", "bcast": 0, "gi": 0, "inplace": 1}, "float32", CACHE)
    assert out[-6:] == [big, 1.0, 0.0, 0.0, 0.0, 0.0] and inp[-6:] == [0.0] * 6
    beyond = 4 + len(ARITH)  # after fixed, autograd, elements, one per function, broadcast
    assert out[beyond] == big - CACHE / (4 * 3) and inp[beyond] == big - CACHE / (4 * 2)
    assert out[:beyond] == inp[:beyond]
    graded = terms({"numel": big, "fn": "add", "bcast": 0, "gi": 1, "inplace": 1}, "float32", CACHE)
    assert graded[-6:] == [0.0, 0.0, 0.0, big, 1.0, 0.0]
    for fn in ("mul", "div"):
        saved = terms({"numel": big, "fn": fn, "bcast": 0, "gi": 1, "inplace": 1}, "float32", CACHE)
        assert saved[-6:] == [0.0, 1.0, 0.0, big, 1.0, big]
    assert terms({"numel": big, "fn": "mul", "bcast": 0, "gi": 0, "inplace": 1}, "float32", CACHE)[-3:] == [0, 0, 0]
    assert terms({"numel": big, "fn": "add", "bcast": 0, "gi": 1, "inplace": 0}, "float32", CACHE)[-3:] == [0, 0, 0]


def test_conv_terms_by_hand():
    # oneDNN's terms (2 images: not ATen's per-image path, tests/test_conv_paths.py), then that
    # path's, all 0. 2 images of 2 x 4 x 4, 3 filters of 3 x 3 padded by 1: 4 x 4 out per
    # filter, so 96 output elements, 96 x 2 x 9 = 1,728 multiply-adds, 64 input and 54 weight
    # elements; a 64-byte cache holds 16 float32 elements of each: 48, 80 and 38 beyond it
    p = {"n": 2, "cin": 2, "h": 4, "w": 4, "cout": 3, "kh": 3, "kw": 3, "sh": 1, "sw": 1,
         "ph": 1, "pw": 1, "groups": 1, "bias": 0, "gi": 1}
    terms = REGISTRY["conv2d"].prior_terms(p, "float32", 64.0)
    assert terms[:11] == [1, 1, 1728, 1728, 96, 64, 64, 54, 48, 80, 38] and not any(terms[11:])
    # stride 2 without padding: one output position per filter; no input gradient, so neither
    # the backward's second product nor the input's gradient elements count
    q = {**p, "sh": 2, "sw": 2, "ph": 0, "pw": 0, "gi": 0}
    assert REGISTRY["conv2d"].prior_terms(q, "float32", 64.0)[:11] == [1, 0, 108, 0, 6, 64, 0, 54, 48, 0, 38]
    # two groups of 4 filters: each filter sees one input channel
    g = {**p, "cout": 4, "groups": 2}
    terms = REGISTRY["conv2d"].prior_terms(g, "float32", 64.0)
    assert terms[2] == 2 * 4 * 16 * 1 * 9 and terms[7] == 4 * 1 * 9


def test_batch_norm_terms_by_hand():
    # 2 images of 3 channels of 4 elements: 24 elements, 3 channels, 6 planes; a 64-byte cache
    # holds 8 float32 elements of each of input and output: 16 of 24 beyond it
    p = {"n": 2, "c": 3, "hw": 4, "gi": 1}
    assert REGISTRY["batch_norm"].prior_terms(p, "float32", 64.0) == [1, 1, 24, 24, 3, 6, 16]
    assert REGISTRY["batch_norm"].prior_terms({**p, "gi": 0}, "float32", 64.0) == [1, 0, 24, 0, 3, 6, 16]


def test_an_embeddings_dense_gradient_is_a_term_of_its_backward_only():
    """Times made of the embedding's terms (the backward's dense table-sized gradient among
    them) are recovered by the prior in each direction, and a table ten times larger costs
    its backward, not its forward, ten times that term."""
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(80):
        p = {"num": int(np.exp(rng.uniform(np.log(2), np.log(60000)))),
             "dim": int(np.exp(rng.uniform(np.log(16), np.log(1024)))),
             "indices": int(np.exp(rng.uniform(np.log(1), np.log(8192)))), "gw": 1}
        fwd = 4e-6 + 2e-9 * p["indices"] + 0.3e-9 * p["indices"] * p["dim"]
        bwd = 9e-6 + 1.3e-9 * p["num"] * p["dim"] + 0.6e-9 * p["indices"] * p["dim"]
        rows.append(OpRecord(DEV, "embedding", p, "float32", fwd, bwd, 5, 0.0, 0.0, 1.0))
    prior = fit_prior(rows, has_bwd=True)
    assert prior["terms"] == "embedding"
    got = prior_times("embedding", "float32", [r.params for r in rows], prior)
    want = np.array([[r.fwd_s, r.bwd_s] for r in rows])
    assert np.allclose(got, np.maximum(want, prior["floor_s"]), rtol=1e-6)
    small = {"num": 1000, "dim": 768, "indices": 128, "gw": 1}
    f, b = prior_times("embedding", "float32", [small, {**small, "num": 10000}], prior).T
    assert f[1] == pytest.approx(f[0]) and b[1] - b[0] == pytest.approx(1.3e-9 * 9000 * 768)



def test_a_call_on_a_path_the_grid_drew_too_seldom_is_flagged():
    """A grid with in-place calls, multiplications and calls that need a gradient, but an
    in-place multiplication that needs one (autograd copies its target first: a term of its
    own) in fewer rows than eltwise's rates need. Every value is seen, so no mode is flagged;
    that term has no rate, and an estimate says how many calls rest on it. The prior names the
    term and its JSON keeps it; the grid's own kinds of call are not flagged, and with enough
    such rows nothing is."""
    from estimator_support import EmptyDB
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.estimator.terms import check_terms_prior, unfitted_calls
    from sgdsim.ops.optypes.pointwise import SAVES_TARGET

    def saves(p):
        return p["fn"] in SAVES_TARGET and p["inplace"] == 1 and p["gi"] == 1

    every = eltwise_rows(300, np.random.default_rng(5))
    kept = [r for r in every if saves(r.params)]
    assert len(kept) >= REGISTRY["eltwise"].min_support
    rows = [r for r in every if not saves(r.params)] + kept[:REGISTRY["eltwise"].min_support - 1]
    prior = fit_prior(rows, has_bwd=True)
    saved = len(prior["fwd"]) - 1  # the saved target's term, arith_terms' last
    assert saved in prior["unfitted"] and prior["fwd"][saved] == 0.0
    assert check_terms_prior(json.loads(json.dumps(prior)), "eltwise") == prior
    mul_ = {"fn": "mul", "numel": 196608, "bcast": 0, "gi": 1, "inplace": 1}
    plain = [r.params for r in rows if not saves(r.params)]
    assert unfitted_calls("eltwise", "float32", [mul_, plain[0], mul_], prior) == 2
    assert unfitted_calls("eltwise", "float32", plain, prior) == 0
    assert saved not in fit_prior(every, has_bwd=True).get("unfitted", [])

    est = train(rows, REGISTRY["eltwise"].shape_dims, np.random.default_rng(1), 2.0, use_prior="auto")
    calls = [REGISTRY["eltwise"].build(p, "float32") for p in (mul_, plain[0])]
    timed = time_calls(calls, EmptyDB(), "dev", {("eltwise", "float32"): est})
    assert timed.unseen == {"eltwise": ["1 call(s) with a term too few grid rows had for a rate"]}


def test_a_backward_term_too_few_rows_had_is_flagged_though_the_forward_had_enough():
    """Broadcast adds in plenty of rows, but few of them need a gradient: the broadcast's
    forward terms have rates, its backward ones do not (run 29's adds freed from 0 s came out
    at 3-7x, unflagged). An estimate of a broadcast add that needs a gradient says it rests on
    a term with no rate; one that needs none, and plain calls, are not flagged."""
    from sgdsim.ops.estimator.terms import check_terms_prior, unfitted_calls

    rng = np.random.default_rng(3)
    support = REGISTRY["eltwise"].min_support or MIN_SUPPORT
    plain = [r for r in eltwise_rows(200, rng) if r.params["fn"] not in MASKS]

    def bcast(numel, gi):
        p = {"fn": "add", "numel": numel, "bcast": 1, "gi": gi, "inplace": 0}
        t = eltwise_time(p)
        return OpRecord(DEV, "eltwise", p, "float32", t, 2 * t if gi else 0.0, 5, 0.0, 0.0, 1.0)

    sizes = [int(s) // 64 * 64 for s in np.geomspace(4096, 4e6, 2 * support)]
    few = [bcast(n, 0) for n in sizes] + [bcast(n, 1) for n in sizes[:support - 1]]
    prior = fit_prior(plain + few, has_bwd=True)
    assert "bwd_unfitted" in prior and not any(
        REGISTRY["eltwise"].prior_terms(bcast(4096, 1).params, "float32", prior["cache_bytes"])[j]
        for j in prior.get("unfitted", []))  # the forward alone would flag nothing
    assert check_terms_prior(json.loads(json.dumps(prior)), "eltwise") == prior
    grad_add, no_grad_add = bcast(65536, 1).params, bcast(65536, 0).params
    calls = [grad_add, no_grad_add, plain[0].params, grad_add]
    assert unfitted_calls("eltwise", "float32", calls, prior) == 2
    enough = fit_prior(plain + few + [bcast(n, 1) for n in sizes[support - 1:]], has_bwd=True)
    assert unfitted_calls("eltwise", "float32", calls, enough) == 0
    with pytest.raises(ValueError, match="bwd_unfitted lists term indices"):
        check_terms_prior(dict(prior, bwd_unfitted=[-1]), "eltwise")


def test_eltwise_fits_a_function_three_rows_stand_on():
    """Element-wise terms are per function and kind of call, on top of one shared pass:
    eltwise asks three rows of a rate (``OpType.min_support``), other types five. A grid with
    three tanh rows fits tanh's own per-element rate; with two it stays 0."""
    from sgdsim.ops.optypes.pointwise import ARITH_NAMES

    assert REGISTRY["eltwise"].min_support == 3 < MIN_SUPPORT
    col = 3 + ARITH_NAMES.index("tanh")
    for k, fitted in ((2, False), (3, True)):
        rows = [r for r in eltwise_rows(150, np.random.default_rng(6)) if r.params["fn"] != "tanh"]
        tanh = [r for r in eltwise_rows(400, np.random.default_rng(7)) if r.params["fn"] == "tanh"][:k]
        prior = fit_prior(rows + tanh, has_bwd=True)
        assert (prior["fwd"][col] > 0) == fitted
