"""2-D convolution (``aten.convolution``, not transposed), forward and backward."""
from __future__ import annotations

from ..template import Call
from .base import OpType, beyond_cache, capped, dense, grad, log_int, window_out

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


def macs(p) -> float:
    oh = window_out(p["h"], p["kh"], p["sh"], p["ph"])
    ow = window_out(p["w"], p["kw"], p["sw"], p["pw"])
    return p["n"] * p["cout"] * oh * ow * p["cin"] // p["groups"] * p["kh"] * p["kw"]


def conv_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A convolution's time, one term per rate: a fixed cost, autograd's bookkeeping, one per
    multiply-add, and again when the input's gradient is computed too (the backward's second
    product), one per element of the output, of the input (again for its gradient) and of the
    weights (reordered into the library's blocked layouts), and each tensor's elements whose
    bytes do not fit in ``cache_bytes``: streamed from memory. Like the roofline, and unlike a
    correction learned on the grid, these scale to the wide layers of real models, which lie
    beyond the grid's channel counts."""
    oh = window_out(p["h"], p["kh"], p["sh"], p["ph"])
    ow = window_out(p["w"], p["kw"], p["sw"], p["pw"])
    g = float(grad(p["gi"]))
    m = float(macs(p))
    out = float(p["n"]) * p["cout"] * oh * ow
    inp = float(p["n"]) * p["cin"] * p["h"] * p["w"]
    wt = float(p["cout"]) * (p["cin"] // p["groups"]) * p["kh"] * p["kw"]
    return [1.0, g, m, m * g, out, inp, inp * g, wt,
            *(beyond_cache(e, 1, dtype, cache_bytes) for e in (inp, out, wt))]


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


CONV2D = OpType("conv2d", (FUNC,), frozenset({"n", "cin", "h", "w", "cout", "kh", "kw"}),
                params_of, build, sample, "2-D convolution, any stride, padding and groups", conv_terms)
