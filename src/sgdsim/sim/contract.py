"""Fold chains of ops on one exclusive resource into single ops: fewer events, the same timing.

Op b is folded into its only predecessor a when a has no other successor, both hold the same
exclusive per-worker resource, and every other op on that resource is an ancestor or a
descendant of b. Then, whenever a ends, nothing else can be queued on the resource (b's
ancestors are done, its descendants not yet released), so b starts the instant a ends, in
every run and whatever the queue keys: the pair behaves as one op that takes a + b. Durations
are summed per profiled row after jitter and overheads, so sampled steps stay whole.

Typical chains: the layers without parameters of a forward or backward pass (ReLU, pooling,
additions), and whole passes of a profile without overlap. ResNet-50 with overlap loses 13 %
of its ops, without overlap 31 %. A timeline shows every op, so plans with a timeline are not
contracted.
"""
from __future__ import annotations

import numpy as np

from .dag import topological


def _related(npred: np.ndarray, succ: list[list[int]]) -> list[int]:
    """Per op, a bitset (a Python int) of its ancestors and descendants."""
    order = topological(npred, succ)
    anc = [0] * len(npred)
    desc = [0] * len(npred)
    for i in order:
        for j in succ[i]:
            anc[j] |= anc[i] | (1 << i)
    for i in reversed(order):
        for j in succ[i]:
            desc[i] |= desc[j] | (1 << j)
    return [a | d for a, d in zip(anc, desc)]


_MEMO: dict[bytes, list[list[int]]] = {}  # every replication and W of a sweep has one DAG


def chains(npred: np.ndarray, succ: list[list[int]], op_res: np.ndarray,
           exclusive: np.ndarray) -> list[list[int]]:
    """Groups of op indices, each a chain to run as one op (head first), in head order.

    ``exclusive[r]``: resource r is held by one op at a time (not a shared link)."""
    key = b"|".join([np.asarray(npred, np.int64).tobytes(), np.asarray(op_res, np.int64).tobytes(),
                     np.asarray(exclusive, bool).tobytes(),
                     np.array([j for s in succ for j in (*s, -1)], np.int64).tobytes()])
    if key not in _MEMO:
        if len(_MEMO) > 64:
            _MEMO.clear()
        _MEMO[key] = _chains(npred, succ, op_res, exclusive)
    return _MEMO[key]


def _chains(npred, succ, op_res, exclusive) -> list[list[int]]:
    n = len(npred)
    pred = [-1] * n
    for i in range(n):
        for j in succ[i]:
            pred[j] = i
    on_res: dict[int, int] = {}
    for i in range(n):
        on_res[int(op_res[i])] = on_res.get(int(op_res[i]), 0) | (1 << i)
    related = _related(npred, succ)
    folds: dict[int, int] = {}  # a -> b: b runs right after a, as part of a's op
    for b in range(n):
        a = pred[b]
        if npred[b] != 1 or not exclusive[op_res[b]] or len(succ[a]) != 1 or op_res[a] != op_res[b]:
            continue
        if (on_res[int(op_res[b])] & ~(1 << b) & ~related[b]) == 0:
            folds[a] = b
    tails = set(folds.values())
    groups = []
    for head in range(n):
        if head in tails:
            continue
        group = [head]
        while group[-1] in folds:
            group.append(folds[group[-1]])
        groups.append(group)
    return groups


def contract(groups: list[list[int]], npred: np.ndarray, succ: list[list[int]],
             dur: np.ndarray, rank: np.ndarray):
    """The DAG and per-op arrays of the contracted plan.

    ``dur``: (rows, n_ops) durations; ``rank``: (orders, n_ops). Returns (keep, npred, succ,
    dur, rank): ``keep`` are the heads' old indices (for per-op arrays that only the head's
    value matters for: resource, size, PS, queue key)."""
    new_of = np.empty(len(npred), np.int64)
    for k, g in enumerate(groups):
        new_of[g] = k
    keep = np.array([g[0] for g in groups], np.int64)
    new_succ = [sorted(int(new_of[j]) for j in succ[g[-1]]) for g in groups]
    return keep, npred[keep].copy(), new_succ, contract_durations(groups, dur), rank[:, keep].copy()


def contract_durations(groups: list[list[int]], dur: np.ndarray, layout=None) -> np.ndarray:
    """Per row, each group's durations summed (sampled steps stay whole). ``layout``: the
    groups' ``reduce_layout``, when the caller keeps it (one per sweep, ``plan.topology``)."""
    flat, starts = layout if layout is not None else reduce_layout(groups)
    return np.add.reduceat(dur[:, flat], starts, axis=1)


def reduce_layout(groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The op indices group by group, and where each group starts among them."""
    flat = np.array([i for g in groups for i in g], np.int64)
    return flat, np.cumsum([0] + [len(g) for g in groups[:-1]])
