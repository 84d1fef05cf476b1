"""A reference call per operator type, timed in pairs with every row: the machine's speed at
the moment the row was measured (issue 38, item 1).

On a shared machine an operator's time drifts with the machine's phase, by ±15-50 % within a
second and 2x between phases (docs/ops-runs.md): more than the timer's own spread, so two
measurements of one call minutes apart disagree by 12-33 % (median), and an estimator trained
on them learns the phases as if they were the shapes'. Calls of one type slow down together,
by about as much, so ``ops measure`` times one fixed call of the row's type (its reference)
after each of the row's differential pairs and stores the reference's median with the row.

Read back, a row's time is rescaled to the machine's mean speed over the rows of its type:

    steady = measured × mean(reference over the type's rows) / reference during this row

The mean, not the median: a training step that runs for minutes averages the phases, slow
ones included. Rows without a reference (older databases, untyped calls, ``--no-reference``)
are read as stored.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .records import OpRecord

REFERENCE_SEED = 20261130  # one reference per type and dtype, the same on every machine
CANDIDATES = 64
REFERENCE_ELEMENTS = 2 ** 18  # the candidate whose tensors are nearest 1 MiB of float32: ~0.1-1 ms on a CPU
# a reference pair's N-copy run lasts about this long: the rows' own runs last 10 ms, and the
# reference, timed after every pair, would double the measuring time at that length
REFERENCE_RUN_S = 0.004


# Each type's reference as the rule below chose it from the samplers of 2026-12-04 (86df9e2),
# kept: a sampler changed since (the element-wise one took dropout's mask and the optimizer's
# update, docs/ops-runs.md, runs 21 and 22) would otherwise move its type's reference, and rows
# measured before and after into one database, or retested, would be read against two calls.
# A type added later takes the rule's choice; freeze it here once rows of it exist.
FROZEN = {
    "addmm": {"ga": 1, "k": 512, "m": 48, "n": 464, "tb": 1},
    "avg_pool2d": {"c": 39, "gi": 1, "h": 58, "k": 3, "n": 2, "p": 1, "s": 2, "w": 58},
    "batch_norm": {"c": 16, "gi": 1, "hw": 2209, "n": 7},
    "bmm": {"b": 70, "ga": 1, "gb": 1, "k": 208, "m": 9, "n": 9},
    "conv2d": {"bias": 1, "cin": 16, "cout": 16, "gi": 1, "groups": 1, "h": 63, "kh": 3, "kw": 3,
               "n": 4, "ph": 1, "pw": 1, "sh": 1, "sw": 1, "w": 63},
    "eltwise": {"bcast": 1, "fn": "add", "gi": 1, "inplace": 0, "numel": 270272},
    "embedding": {"dim": 172, "gw": 1, "indices": 23, "num": 1679},
    "gelu": {"approx": "tanh", "gi": 1, "numel": 227080},
    "layer_norm": {"cols": 700, "gi": 1, "rows": 367},
    "log_softmax": {"cols": 3351, "gi": 1, "rows": 76},
    "max_pool2d": {"c": 39, "gi": 1, "h": 58, "k": 3, "n": 2, "p": 1, "s": 2, "w": 58},
    "mean": {"gi": 1, "numel": 358666, "out": 51238},
    "mm": {"ga": 1, "gb": 1, "k": 512, "m": 48, "n": 464, "tb": 1},
    "nll_loss": {"cols": 3351, "gi": 1, "rows": 76},
    "relu": {"gi": 1, "numel": 293944},
    "sdpa": {"b": 25, "causal": 1, "d": 64, "dropout": 0, "gi": 1, "heads": 1, "lk": 54, "lq": 54,
             "mask": 0},
    "softmax": {"cols": 3351, "gi": 1, "rows": 76},
}


def reference_params(op: str, dtype: str) -> dict:
    """The type's reference parameters: ``FROZEN``'s, or else, among the type's first
    ``CANDIDATES`` samples from a fixed seed, the one whose tensors hold nearest
    ``REFERENCE_ELEMENTS`` (log distance). Machine-independent, so a database's references
    agree wherever it was measured; frozen, so they agree whenever."""
    from .optypes import REGISTRY, complete

    if op in FROZEN:
        return complete(op, dict(FROZEN[op]))
    t = REGISTRY[op]
    rng = np.random.default_rng(REFERENCE_SEED)
    best, best_d = None, math.inf
    for _ in range(CANDIDATES):
        p = t.sample(rng)
        size = sum(s.numel for s in t.build(p, dtype).tensors())
        d = abs(math.log(max(size, 1) / REFERENCE_ELEMENTS))
        if d < best_d:
            best, best_d = p, d
    return best


def means(records) -> dict[tuple[str, str, str], tuple[float, float]]:
    """{(device, op, dtype): (mean forward reference, mean backward reference)} over the rows
    that have one (0.0 where none has)."""
    acc: dict[tuple, list[list[float]]] = {}
    for r in records:
        f, b = acc.setdefault((r.device.name, r.op, r.dtype), [[], []])
        if r.fwd_ref_s > 0:
            f.append(r.fwd_ref_s)
        if r.bwd_ref_s > 0:
            b.append(r.bwd_ref_s)
    return {k: (float(np.mean(f)) if f else 0.0, float(np.mean(b)) if b else 0.0)
            for k, (f, b) in acc.items()}


def steady(records, by_type: dict[tuple[str, str, str], tuple[float, float]]) -> list[OpRecord]:
    """``records`` at the machine's mean speed (``by_type``: ``means`` of their whole types)."""
    out = []
    for r in records:
        mf, mb = by_type.get((r.device.name, r.op, r.dtype), (0.0, 0.0))
        fwd = r.fwd_s * mf / r.fwd_ref_s if r.fwd_ref_s > 0 and mf > 0 else r.fwd_s
        bwd = r.bwd_s * mb / r.bwd_ref_s if r.bwd_ref_s > 0 and mb > 0 else r.bwd_s
        out.append(dataclasses.replace(r, fwd_s=fwd, bwd_s=bwd) if (fwd, bwd) != (r.fwd_s, r.bwd_s)
                   else r)
    return out


def speed_factor(shares: dict[str, float], mean_s: dict[str, float],
                 now_s: dict[str, float]) -> float:
    """What a time measured now is multiplied by to read it at a database's mean speed, for
    work that spends ``shares`` of its time in each operator type: the share-weighted
    mean(reference) / reference now. The share left over (untyped calls) and types without
    both references count at 1, as their rows are read as stored."""
    factor = 1.0 - sum(shares.values())
    for op, share in shares.items():
        mean, now = mean_s.get(op, 0.0), now_s.get(op, 0.0)
        factor += share * (mean / now if mean > 0 and now > 0 else 1.0)
    return factor


class Reference:
    """One type's reference call on this machine: ``sample()`` times one differential pair of
    its forward (N and N/2 copies, N from a pilot) and returns seconds per copy."""

    def __init__(self, op: str, dtype: str, device: str = "cpu", sync=None):
        from .measure import Runner, _copies, _timed
        from .optypes import REGISTRY

        self.params = reference_params(op, dtype)
        self._timed = _timed
        self._sync = sync or (lambda: None)
        self._runner = Runner(REGISTRY[op].build(self.params, dtype),
                              np.random.default_rng(REFERENCE_SEED), device)
        pilot = min(_timed(self._runner, 1, self._sync) for _ in range(3))
        self.n = _copies(pilot, self._runner, REFERENCE_RUN_S)
        self.sample()  # the allocator settles on N copies before the first sample counts

    def sample(self) -> float:
        n, m = self.n, self.n // 2
        t_n = self._timed(self._runner, n, self._sync)
        t_m = self._timed(self._runner, m, self._sync)
        return max((t_n - t_m) / (n - m), 0.0)
