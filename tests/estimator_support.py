"""Synthetic operators whose complexity function is known, for the estimator tests.

Times have 2 % multiplicative log-normal noise (mean |error| of a perfect model: ~1.6 %) and a
fixed overhead, like measured operators: small ones cost their launch, big ones their work.
"""
from __future__ import annotations

import numpy as np

from sgdsim.ops.records import Device, OpRecord

DEV = Device("synthetic", "cpu")
MM_DIMS = {"m", "k", "n"}
CONV_DIMS = {"n", "h", "w", "cin", "cout", "kh", "kw"}


class EmptyDB:
    """An operator database with no row: every call goes to its type's estimator."""

    def lookup(self, device, keys):
        return {}

    def load(self, **_):
        return []


def log_int(rng, low, high) -> int:
    return int(np.exp(rng.uniform(np.log(low), np.log(high))))


def matmul_like(rows: int, seed: int = 0, dtype: str = "float32") -> list[OpRecord]:
    """t = 2e-9 m k n + 5 µs; a transposed-B mode ``tb`` that costs 30 % more; backward 2x."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rows):
        p = {"m": log_int(rng, 8, 2048), "k": log_int(rng, 8, 2048),
             "n": log_int(rng, 8, 2048), "tb": int(rng.integers(2)), "gi": 1}
        t = (2e-9 * p["m"] * p["k"] * p["n"] * (1.3 if p["tb"] else 1.0) + 5e-6)
        out.append(OpRecord(DEV, "mm", p, dtype, t * rng.lognormal(0, 0.02),
                            2 * t * rng.lognormal(0, 0.02)))
    return out


def conv_like(rows: int, seed: int = 0) -> list[OpRecord]:
    """t = 1e-11 n h w cin cout kh kw / (sh sw) + 5 µs: strides 1..8 (numeric, may be
    inverse), kernels of 1, 3, 5, 7 (few values, but tensor dimensions), a bias flag (mode);
    no backward."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rows):
        p = {"n": log_int(rng, 1, 32), "h": log_int(rng, 4, 64), "w": log_int(rng, 4, 64),
             "cin": log_int(rng, 3, 256), "cout": log_int(rng, 3, 256),
             "kh": int(rng.choice([1, 3, 5, 7])), "kw": int(rng.choice([1, 3, 5, 7])),
             "sh": int(rng.integers(1, 9)), "sw": int(rng.integers(1, 9)),
             "bias": int(rng.integers(2))}
        work = p["n"] * p["h"] * p["w"] * p["cin"] * p["cout"] * p["kh"] * p["kw"] / \
            (p["sh"] * p["sw"])
        out.append(OpRecord(DEV, "conv2d", p, "float32",
                            (1e-11 * work + 5e-6) * rng.lognormal(0, 0.02), 0.0))
    return out


def relu_like(rows: int, seed: int = 0) -> list[OpRecord]:
    """t = 1e-10 numel + 3 µs, backward 1.5x, but none when no input needs a gradient."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rows):
        p = {"numel": log_int(rng, 64, 2 ** 24), "gi": int(rng.random() < 0.8)}
        t = (1e-10 * p["numel"] + 3e-6) * rng.lognormal(0, 0.02)
        out.append(OpRecord(DEV, "relu", p, "float32", t, 1.5 * t if p["gi"] else 0.0))
    return out
