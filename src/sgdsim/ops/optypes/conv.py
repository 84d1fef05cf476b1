"""2-D convolution (``aten.convolution``, not transposed), forward and backward."""
from __future__ import annotations

from ..template import Call
from .base import OpType, capped, dense, grad, log_int

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
    oh = (p["h"] + 2 * p["ph"] - p["kh"]) // p["sh"] + 1
    ow = (p["w"] + 2 * p["pw"] - p["kw"]) // p["sw"] + 1
    return p["n"] * p["cout"] * oh * ow * p["cin"] // p["groups"] * p["kh"] * p["kw"]


def _draw(rng):
    k = int(rng.choice([1, 3, 3, 5, 7]))
    s = int(rng.choice([1, 1, 2]))
    size = log_int(rng, 7, 112)
    pad = k // 2 if rng.random() < 0.8 else 0
    return {"n": log_int(rng, 1, 16), "cin": log_int(rng, 3, 512), "h": size, "w": size,
            "cout": log_int(rng, 8, 512), "kh": k, "kw": k, "sh": s, "sw": s, "ph": pad,
            "pw": pad, "groups": 1, "bias": int(rng.random() < 0.5),
            "gi": int(rng.random() < 0.8)}


def sample(rng):
    return capped(rng, _draw, macs, 4e8)


CONV2D = OpType("conv2d", (FUNC,), frozenset({"n", "cin", "h", "w", "cout", "kh", "kw"}),
                params_of, build, sample, "2-D convolution, any stride, padding and groups")
