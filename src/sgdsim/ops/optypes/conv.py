"""2-D convolution (``aten.convolution``, not transposed), forward and backward."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int, window_out
from .matmul import gemm_backward_terms, gemm_terms

FUNC = "aten.convolution.default"


def params_of(call: Call):
    x, w, bias, stride, padding, dilation, transposed, _, groups = call.args[:9]
    if transposed or len(x.shape) != 4 or tuple(dilation) != (1, 1):
        return None
    n, cin, h, wd = x.shape
    cout, _, kh, kw = w.shape
    return {"n": n, "cin": cin, "h": h, "w": wd, "cout": cout, "kh": kh, "kw": kw,
            "sh": stride[0], "sw": stride[1], "ph": padding[0], "pw": padding[1],
            "groups": groups, "bias": int(bias is not None), "gi": int(x.requires_grad)}


def build(p, dtype) -> Call:
    x = dense((p["n"], p["cin"], p["h"], p["w"]), grad(p["gi"]), dtype)
    w = dense((p["cout"], p["cin"] // p["groups"], p["kh"], p["kw"]), True, dtype)
    b = dense((p["cout"],), True, dtype) if p["bias"] else None
    return Call(FUNC, (x, w, b, (p["sh"], p["sw"]), (p["ph"], p["pw"]), (1, 1), False, (0, 0),
                       p["groups"]))


def _positions(p) -> tuple[int, int]:
    """The output's height and width."""
    return window_out(p["h"], p["kh"], p["sh"], p["ph"]), window_out(p["w"], p["kw"], p["sw"], p["pw"])


def _pointwise(p) -> bool:
    """A 1x1 kernel at stride 1."""
    return p["kh"] == p["kw"] == 1 and p["sh"] == p["sw"] == 1


def macs(p) -> float:
    oh, ow = _positions(p)
    return p["n"] * p["cout"] * oh * ow * p["cin"] // p["groups"] * p["kh"] * p["kw"]


def slow_path(p, dtype: str) -> bool:
    """Whether ATen runs this convolution as one matrix product per image (``Slow2d``) rather
    than through oneDNN: its rule (``ConvParams::use_mkldnn``) for float32 on one thread, the
    thread count the grid and the profiles time with. A 1x1 convolution at stride 1 of fewer
    than 16 images, or one image of at most 20,480 elements under a kernel of 3x3 or less.
    ``torch._C._select_conv_backend`` agrees (tests/test_conv_paths.py)."""
    if dtype != "float32":
        return False
    pointwise = _pointwise(p) and p["n"] < 16
    small = (p["groups"] == 1 and not (p["kh"] > 3 and p["kw"] > 3) and p["n"] == 1
             and p["cin"] * p["h"] * p["w"] <= 20480)
    return pointwise or small


def _per_image(p):
    """The product ``Slow2d`` runs for each image: the weights (cout x cin·kh·kw) times the
    unfolded input (cin·kh·kw x output positions), and the unfolded elements (none for a 1x1
    kernel at stride 1 without padding, which it reads in place)."""
    oh, ow = _positions(p)
    deep = (p["cin"] // p["groups"]) * p["kh"] * p["kw"]
    product = {"b": p["n"], "m": p["cout"], "k": deep, "n": oh * ow, "tb": 0, "ga": 1,
               "gb": p["gi"]}
    in_place = _pointwise(p) and p["ph"] == p["pw"] == 0
    return product, 0.0 if in_place else float(p["n"]) * deep * oh * ow


def _onednn_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """oneDNN's convolution, one term per rate: a fixed cost, autograd's bookkeeping, one per
    multiply-add, and again when the input's gradient is computed too (the backward's second
    product), one per element of the output, of the input (again for its gradient) and of the
    weights (reordered into the library's blocked layouts), and each tensor's elements whose
    bytes do not fit in ``cache_bytes``: streamed from memory."""
    oh, ow = _positions(p)
    g = float(grad(p["gi"]))
    m = float(macs(p))
    out = float(p["n"]) * p["cout"] * oh * ow
    inp = float(p["n"]) * p["cin"] * p["h"] * p["w"]
    wt = float(p["cout"]) * (p["cin"] // p["groups"]) * p["kh"] * p["kw"]
    return [1.0, g, m, m * g, out, inp, inp * g, wt,
            *(beyond_cache(e, 1, dtype, cache_bytes) for e in (inp, out, wt))]


def _paths(p, dtype: str, cache_bytes: float, products) -> list[float]:
    """oneDNN's terms, then the per-image products' and the unfolded elements': each path at
    rates of its own, the other path's terms 0. Like the roofline, and unlike a correction
    learned on the grid, these scale to the wide layers of real models. At shared rates the
    grid's dozen small per-image rows pulled oneDNN's (run 13: conv2d's held-out forward median
    23.2 %, 14.1 with these), and with a rate per term of their own, not a product's terms,
    ResNet-50's 1x1 layers came out up to 1.5x (docs/ops-runs.md, run 13)."""
    if slow_path(p, dtype):  # only the path taken is computed; the other's terms are 0
        product, unfolded = _per_image(p)
        return [0.0] * _ONEDNN_TERMS + products(product, dtype, cache_bytes) + [unfolded]
    return _onednn_terms(p, dtype, cache_bytes) + [0.0] * (_PRODUCT_TERMS + 1)


def conv_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A convolution's forward: oneDNN's terms, or its per-image products' (a matrix
    product's terms, ``matmul.gemm_terms``)."""
    return _paths(p, dtype, cache_bytes, gemm_terms)


def conv_backward_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """Its backward: oneDNN's terms (their own rates), or the per-image products' backward
    (the weights' gradient, and the input's where it needs one: ``gemm_backward_terms``)."""
    return _paths(p, dtype, cache_bytes, gemm_backward_terms)


def _channels(rng, low: int) -> int:
    """Models' channel counts are multiples of 16 (every torchvision and transformer net, but
    the image's 3 at the input), which oneDNN's blocked layouts favour. Trained on log-uniform
    counts, mostly odd, the estimator put ResNet-50's convs at 1.96x their time; drawn like
    this, 0.87x (docs/ops.md §3). A fifth stay arbitrary, for the odd layers that exist."""
    c = log_int(rng, low, 512)
    return c if rng.random() < 0.2 else max(16, 16 * round(c / 16))


def _draw(rng):
    if rng.random() < 0.1:  # a patch embedding (ViT): kernel = stride, no padding
        k = int(rng.choice([2, 4, 8, 14, 16]))
        size = k * log_int(rng, 2, 16)
        return {"n": log_int(rng, 1, 16), "cin": 3, "h": size, "w": size,
                "cout": _channels(rng, 16), "kh": k, "kw": k, "sh": k, "sw": k, "ph": 0,
                "pw": 0, "groups": 1, "bias": 1, "gi": 0}
    k = int(rng.choice([1, 3, 3, 5, 7]))
    s = int(rng.choice([1, 1, 2]))
    size = log_int(rng, 7, 112)
    pad = k // 2 if rng.random() < 0.8 else 0
    cin = 3 if rng.random() < 0.1 else _channels(rng, 8)
    return {"n": log_int(rng, 1, 16), "cin": cin, "h": size, "w": size,
            "cout": _channels(rng, 8), "kh": k, "kw": k, "sh": s, "sw": s, "ph": pad,
            "pw": pad, "groups": 1, "bias": int(rng.random() < 0.5),
            "gi": int(rng.random() < 0.8) if cin != 3 else 0}


def sample(rng):
    return capped(rng, _draw, macs, 4e8)


_EXAMPLE = {"n": 1, "cin": 1, "h": 1, "w": 1, "cout": 1, "kh": 1, "kw": 1, "sh": 1, "sw": 1,
            "ph": 0, "pw": 0, "groups": 1, "bias": 0, "gi": 1}
_ONEDNN_TERMS = len(_onednn_terms(_EXAMPLE, "float32", 1.0))
_PRODUCT_TERMS = len(gemm_terms(_per_image(_EXAMPLE)[0], "float32", 1.0))  # the backward's too

# revision 2: its per-image products' wide-output rate from 8,192 positions, not 4,097 (run 56)
CONV2D = OpType("conv2d", (FUNC,), frozenset({"n", "cin", "h", "w", "cout", "kh", "kw"}),
                params_of, build, sample, "2-D convolution, any stride, padding and groups", conv_terms,
                conv_backward_terms, merged_terms=_onednn_terms, terms_revision=2)
