"""Matrix products: ``addmm`` (``F.linear`` with a bias), ``mm`` and ``bmm``.

``tb`` says whether the second matrix is a transposed view (a linear layer's weight is): BLAS
reads it in a different order, and its backward makes different copies.
"""
from __future__ import annotations

from ..template import Call
from .base import (OpType, aligned_int, beyond_cache, capped, dense, grad, is_transposed, log_int,
                   transposed)


def _mat(shape, flag_t, g, dtype):
    return (transposed if int(flag_t) else dense)(shape, g, dtype)


def addmm_params(call: Call):
    bias, a, b = call.args[:3]
    if len(a.shape) != 2 or len(bias.shape) != 1:
        return None
    return {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1], "tb": is_transposed(b),
            "ga": int(a.requires_grad)}


def addmm_build(p, dtype) -> Call:
    a = dense((p["m"], p["k"]), grad(p["ga"]), dtype)
    b = _mat((p["k"], p["n"]), p["tb"], True, dtype)
    return Call("aten.addmm.default", (dense((p["n"],), True, dtype), a, b))


def mm_params(call: Call):
    a, b = call.args[:2]
    return {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1], "tb": is_transposed(b),
            "ga": int(a.requires_grad), "gb": int(b.requires_grad)}


def mm_build(p, dtype) -> Call:
    return Call("aten.mm.default", (dense((p["m"], p["k"]), grad(p["ga"]), dtype),
                                    _mat((p["k"], p["n"]), p["tb"], grad(p["gb"]), dtype)))


def bmm_params(call: Call):
    a, b = call.args[:2]
    return {"b": a.shape[0], "m": a.shape[1], "k": a.shape[2], "n": b.shape[2],
            "ga": int(a.requires_grad), "gb": int(b.requires_grad)}


def bmm_build(p, dtype) -> Call:
    return Call("aten.bmm.default", (dense((p["b"], p["m"], p["k"]), grad(p["ga"]), dtype),
                                     dense((p["b"], p["k"], p["n"]), grad(p["gb"]), dtype)))


def _mkn(rng):
    """Rows (batch x positions) mostly multiples of 8, the two widths of 16, as in models:
    drawn log-uniform, mostly odd, the grid's fastest addmm ran at 91 GFLOP/s while an MLP's
    784x256 layer ran at 123, and the estimator put the MLP's step at 1.4-1.6x (docs/ops.md)."""
    return {"m": aligned_int(rng, 1, 4096, 8), "k": aligned_int(rng, 8, 4096),
            "n": aligned_int(rng, 8, 4096)}


def _vocab(rng):
    """A language model's output layer: a width onto a vocabulary (GPT-2's 768 -> 50,257,
    BERT's 768 -> 30,522), a product the square draws above never reach."""
    return {"m": aligned_int(rng, 1, 4096, 8), "k": aligned_int(rng, 64, 2048),
            "n": log_int(rng, 8192, 65536)}


def _flops(p):
    return p["m"] * p["k"] * p["n"] * p.get("b", 1)


MAX_MACS = 3e8  # a grid point: at most ~20 ms on a CPU core
# the output layers' few points, up to ~0.7 s each: GPT-2's head at batch 4 x 64 positions is
# 9.9 G multiply-adds, and its backward's weight gradient (an inner dimension of 256, a fresh
# 39 M-element output) ran at 4.7x its forward, where a cap of 3 G kept every vocabulary row's
# batch x positions under 80 (docs/ops-runs.md, run 8)
VOCAB_SHARE, VOCAB_MAX_MACS = 0.1, 1e10


def _draw_2d(rng):
    if rng.random() < VOCAB_SHARE:
        return capped(rng, _vocab, _flops, VOCAB_MAX_MACS)
    return capped(rng, _mkn, _flops, MAX_MACS)


def addmm_sample(rng):
    return {**_draw_2d(rng), "tb": 1, "ga": int(rng.random() < 0.8)}


def mm_sample(rng):
    return {**_draw_2d(rng), "tb": int(rng.random() < 0.5),
            "ga": int(rng.random() < 0.8), "gb": int(rng.random() < 0.8)}


def bmm_sample(rng):
    def draw(r):
        return {"b": log_int(r, 1, 256), "m": aligned_int(r, 1, 1024, 8),
                "k": aligned_int(r, 8, 1024), "n": aligned_int(r, 8, 1024)}
    return {**capped(rng, draw, _flops, MAX_MACS), "ga": 1, "gb": 1}


TILE_N = 16  # output columns one vector register holds: float32 lanes of AVX-512
# A second, fixed level past the one cache size a type's terms choose: over twelve EPYC grids
# the products whose A, B and C pass 32 MB were 14-31 % slower than those terms said, and
# 8 MiB (of 4, 6, 8, 16 and 32 tried) fitted them best (docs/ops-runs.md, after run 53; run 54)
MEMORY_BYTES = 8 * 2 ** 20
# Outputs wider than this pay a rate a multiply-add of their own: over the same grids the
# vocabulary-sized products (8,192 columns and more) ran 13-16 % above the terms with the
# second level, those of 1,024-4,096 within 1 % (run 55). The grids draw no width in between;
# on products of those widths the rate from 8,192 on missed them by less than the rate from
# 4,097 (run 56, forward median 14 / 19 % against 23 / 29 % for addmm / mm; held out on run
# 57, 8.8 / 7.5 % against 14.0 / 25.4, and 11.7 / 16.6 from 6,144: docs/ops-runs.md)
WIDE_N = 8191


def gemm_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A matrix product's time, one term per rate: a fixed cost, autograd's bookkeeping, one
    per multiply-add, one per output element (written once, its k-loop set up once), one per
    element of A and of B (packed into the micro-kernel's panels before use), B's again when
    it is a transposed view (packed from another order), and each operand's elements whose
    bytes do not fit in ``cache_bytes``: streamed from memory (a batch's matrices together:
    each is used once, so a batch larger than the cache streams all of them). A product with
    few rows is bound by that stream of B, which one rate per multiply-add cannot see.

    Three more, each an element of A or B on a path the BLAS takes for some shapes (seen in
    the grids of MKL on an AMD and an Intel core, docs/ops-runs.md): outputs narrower than
    ``TILE_N`` columns leave the vector kernel (5-10 GFLOP/s against 50-90), a last partial
    tile of columns costs about a full one, and two or three rows are neither a matrix-vector
    product nor a tile. Two more the rows and the batch bring (docs/ops-runs.md, run 18): B's
    elements again for 4 to 15 rows (a panel packed for a few rows and used by only those:
    the 2-3 row term, one tile further), and a set-up per batch item after the first (each
    is its own GEMM). Last, the elements of A, B and C together beyond ``MEMORY_BYTES``, a
    second level of memory that one chosen cache size cannot also be, and the multiply-adds
    of outputs wider than ``WIDE_N`` columns (a vocabulary's head) again."""
    b, m, k, n = (float(p.get("b", 1)), float(p["m"]), float(p["k"]), float(p["n"]))
    g = grad(p["ga"]) or grad(p.get("gb", 0))
    narrow, partial = n < TILE_N, n > TILE_N and n % TILE_N != 0
    return [1.0, float(g), b * m * k * n, b * m * n, b * m * k, b * k * n,
            b * k * n * int(p.get("tb", 0)),
            b * m * k * narrow, b * m * k * partial, b * k * n * (1 < m < 4),
            b * k * n * (4 <= m < TILE_N), b - 1.0,
            *(beyond_cache(b * e, 1, dtype, cache_bytes) for e in (m * k, k * n, m * n)),
            beyond_cache(b * (m * k + k * n + m * n), 1, dtype, MEMORY_BYTES), b * m * k * n * (n > WIDE_N)]


def gemm_backward_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """The backward's terms: those of its own products, summed. A's gradient is dC @ B^T (m
    rows, n deep, k columns; B^T a transposed view unless B was one), a plain B's is A^T @ dC
    (k rows, m deep, n columns), each where its operand needs a gradient (a linear layer's weight
    always does). The forward's shape is the wrong one for them: a layer's weight gradient
    has its rows and depth swapped, which decides the tiles and paths above.

    When B is a transposed view (a linear layer's weight), autograd keeps its gradient in
    B's layout: it runs dC^T @ A (n rows, m deep, k columns) and returns its transpose, so
    the output's columns, whose tiles the terms count, are k, not n (a layer whose inputs are
    not a multiple of 16 wide pays the partial tile in its backward: docs/ops-runs.md)."""
    b, m, k, n, tb = p.get("b", 1), p["m"], p["k"], p["n"], int(p.get("tb", 0))
    b_grad = {"b": b, "m": n, "k": m, "n": k} if tb else {"b": b, "m": k, "k": m, "n": n}
    products = ([{"b": b, "m": m, "k": n, "n": k, "tb": 1 - tb, "ga": 1}] if grad(p["ga"]) else []) + \
        ([{**b_grad, "tb": 0, "ga": 1}] if grad(p.get("gb", 1)) else [])
    if not products:  # nothing needs a gradient: no backward, every term 0
        return [0.0] * len(gemm_terms(p, dtype, cache_bytes))
    return [float(sum(col)) for col in zip(*(gemm_terms(q, dtype, cache_bytes) for q in products))]


MNK = frozenset({"m", "k", "n"})
# revision 2: a transposed B's gradient as dC^T @ A (2026-12-07, docs/ops-runs.md run 40);
# 3 (bmm 2): the elements beyond MEMORY_BYTES (run 54); 4 (bmm 3): wide outputs (run 55);
# 5 (bmm 4): wide from 8,192 columns, not 4,097 (run 56: a model's rows may have widths between)
ADDMM = OpType("addmm", ("aten.addmm.default",), MNK, addmm_params, addmm_build, addmm_sample,
               "bias + A @ B (a linear layer)", gemm_terms, gemm_backward_terms, terms_revision=5)
MM = OpType("mm", ("aten.mm.default",), MNK, mm_params, mm_build, mm_sample, "A @ B", gemm_terms,
            gemm_backward_terms, terms_revision=5)
BMM = OpType("bmm", ("aten.bmm.default",), MNK | {"b"}, bmm_params, bmm_build, bmm_sample,
             "batched A @ B (attention scores)", gemm_terms, gemm_backward_terms, terms_revision=4)
