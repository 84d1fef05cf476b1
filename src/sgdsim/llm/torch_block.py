"""Times one tensor-parallel shard of one transformer block with PyTorch (the optional
``torch`` extra): the ops of ``ops.block_ops`` as real kernels, in the layout's precision, on
``cpu`` or ``cuda``. The collectives between shards are not run: ``step.py`` models them.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict

from ..errors import ConfigError
from .block_profile import SHAPE, BlockTimes
from .model import Transformer

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _shard(torch, model: Transformer, mb: int, tp: int, dtype, device):
    """The block's weights for one of ``tp`` shards, and forward functions (whole, core)."""
    h, d = model.hidden, model.head_dim
    nh, nkv, ffn = model.heads // tp, model.kv_heads // tp, model.ffn // tp

    def weight(*shape):
        return (torch.randn(*shape, device=device, dtype=dtype) / math.sqrt(shape[0])).requires_grad_()

    w_qkv, w_o = weight(h, (nh + 2 * nkv) * d), weight(nh * d, h)
    w_up, w_down = weight(h, ffn * (2 if model.glu else 1)), weight(ffn, h)
    norm = torch.nn.functional.rms_norm if model.glu else torch.nn.functional.layer_norm
    scale = [torch.ones(h, device=device, dtype=dtype, requires_grad=True) for _ in range(2)]

    def core(q, k, v):
        scores = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        return torch.nn.functional.dropout(scores, 0.1) @ v

    def split(y):
        b, s = y.shape[:2]
        q, k, v = (y @ w_qkv).split([nh * d, nkv * d, nkv * d], dim=-1)
        q = q.view(b, s, nh, d).transpose(1, 2)
        k, v = (t.view(b, s, nkv, d).transpose(1, 2).repeat_interleave(nh // nkv, dim=1) for t in (k, v))
        return q, k, v

    def forward(x):
        q, k, v = split(norm(x, (h,), scale[0]))
        ctx = core(q, k, v).transpose(1, 2).reshape(x.shape[0], x.shape[1], nh * d)
        x = x + torch.nn.functional.dropout(ctx @ w_o, 0.1)
        up = norm(x, (h,), scale[1]) @ w_up
        if model.glu:
            gate, up = up.chunk(2, dim=-1)
            act = torch.nn.functional.silu(gate) * up
        else:
            act = torch.nn.functional.gelu(up)
        return x + torch.nn.functional.dropout(act @ w_down, 0.1)

    x = torch.randn(mb, model.seq, h, device=device, dtype=dtype, requires_grad=True)
    return x, forward, split, core


def measure_block(model: Transformer, tp: int, mb: int, precision: str, device: str = "cpu",
                  repeats: int = 10, warmup: int = 2, progress=None) -> BlockTimes:
    """Median forward, backward and attention-core seconds over ``repeats`` runs."""
    try:
        import torch
    except ImportError:
        raise ConfigError("profiling a block needs PyTorch: pip install 'sgdsim[torch]'") from None
    if precision not in DTYPES:
        raise ConfigError(f"profiling a block in {precision} is not supported (one of {', '.join(DTYPES)})")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: PyTorch sees no CUDA device here")
    if model.heads % tp or model.kv_heads % tp or model.ffn % tp:
        raise ConfigError(f"tp={tp} does not divide the heads ({model.heads}, {model.kv_heads} key/value) "
                          f"and the MLP width ({model.ffn})")
    x, forward, split, core = _shard(torch, model, mb, tp, getattr(torch, DTYPES[precision]), device)

    def clock():
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    fwd, bwd, cores = [], [], []
    for i in range(warmup + repeats):
        t0 = clock()
        y = forward(x)
        t1 = clock()
        y.backward(torch.ones_like(y))
        t2 = clock()
        q, k, v = (t.detach().requires_grad_() for t in split(x.detach()))
        t3 = clock()
        core(q, k, v)
        t4 = clock()
        if i >= warmup:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            cores.append(t4 - t3)
        if progress:
            progress()
    both = sorted(f + b for f, b in zip(fwd, bwd))
    med = statistics.median
    spread = (both[int(0.9 * (len(both) - 1))] - both[int(0.1 * (len(both) - 1))]) / med(both)
    shape = {k: v for k, v in asdict(model).items() if k in SHAPE}
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"
    return BlockTimes(model=shape, tp=tp, mb=mb, precision=precision, device=name,
                      forward_s=med(fwd), backward_s=med(bwd), core_forward_s=min(med(cores), med(fwd)),
                      repeats=repeats, spread=round(spread, 4))
