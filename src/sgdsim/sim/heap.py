"""Indexed binary min-heaps stored in flat arrays, many heaps sharing one set of arrays.

Used for the kernel's timers, each link's flows (ordered by virtual finish tag) and each
(worker, resource) ready queue. An entry is (key, seq, item): ties on key are broken by seq so
runs are deterministic. ``pos[item]`` is the slot of item within its heap (-1 when absent),
which gives O(log n) update and removal of any item.

Heap ``h`` occupies slots ``base[h] .. base[h] + capacity`` (``capacities[h]`` where given);
``size[h]`` is its length.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..compiled import F64, I64, core


class Heaps(NamedTuple):
    key: F64
    seq: I64
    item: I64
    pos: I64
    base: I64
    size: I64


def make_heaps(n_heaps: int, capacity: int, n_items: int, capacities=None) -> Heaps:
    caps = np.full(n_heaps, capacity, np.int64) if capacities is None else np.asarray(capacities, np.int64)
    slots = int(caps.sum())
    return Heaps(
        key=np.zeros(slots, np.float64),
        seq=np.zeros(slots, np.int64),
        item=np.zeros(slots, np.int64),
        pos=np.full(n_items, -1, np.int64),
        base=np.concatenate([[0], np.cumsum(caps)[:-1]]).astype(np.int64),
        size=np.zeros(n_heaps, np.int64),
    )


@core
def _less(H: Heaps, a: int, b: int) -> bool:
    ka = H.key[a]
    kb = H.key[b]
    if ka != kb:
        return ka < kb
    return H.seq[a] < H.seq[b]


@core
def _swap(H: Heaps, b: int, i: int, j: int) -> None:
    a, c = b + i, b + j
    k, s, it = H.key[a], H.seq[a], H.item[a]
    H.key[a], H.seq[a], H.item[a] = H.key[c], H.seq[c], H.item[c]
    H.key[c], H.seq[c], H.item[c] = k, s, it
    H.pos[H.item[a]] = i
    H.pos[H.item[c]] = j


@core
def _sift_up(H: Heaps, b: int, i: int) -> None:
    while i > 0:
        parent = (i - 1) >> 1
        if _less(H, b + i, b + parent):
            _swap(H, b, i, parent)
            i = parent
        else:
            break


@core
def _sift_down(H: Heaps, b: int, n: int, i: int) -> None:
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        if left + 1 < n and _less(H, b + left + 1, b + left):
            child = left + 1
        if _less(H, b + child, b + i):
            _swap(H, b, i, child)
            i = child
        else:
            break


@core
def heap_set(H: Heaps, h: int, item: int, key: float, seq: int) -> None:
    """Insert ``item`` with (key, seq), or move it there if already present."""
    b = H.base[h]
    i = H.pos[item]
    if i < 0:
        i = H.size[h]
        H.size[h] = i + 1
        H.item[b + i] = item
        H.pos[item] = i
        H.key[b + i] = key
        H.seq[b + i] = seq
        _sift_up(H, b, i)
        return
    H.key[b + i] = key
    H.seq[b + i] = seq
    _sift_up(H, b, i)
    _sift_down(H, b, H.size[h], H.pos[item])


@core
def heap_remove(H: Heaps, h: int, item: int) -> None:
    """Remove ``item`` if present."""
    i = H.pos[item]
    if i < 0:
        return
    b = H.base[h]
    last = H.size[h] - 1
    H.size[h] = last
    H.pos[item] = -1
    if i != last:
        H.key[b + i] = H.key[b + last]
        H.seq[b + i] = H.seq[b + last]
        moved = H.item[b + last]
        H.item[b + i] = moved
        H.pos[moved] = i
        _sift_up(H, b, i)
        _sift_down(H, b, last, H.pos[moved])


@core
def heap_pop(H: Heaps, h: int) -> int:
    """Remove and return the item with the smallest (key, seq); -1 when empty."""
    if H.size[h] == 0:
        return -1
    item = H.item[H.base[h]]
    heap_remove(H, h, item)
    return item


@core
def heap_top(H: Heaps, h: int) -> int:
    """The item with the smallest (key, seq) without removing it; -1 when empty."""
    if H.size[h] == 0:
        return -1
    return H.item[H.base[h]]


@core
def heap_top_key(H: Heaps, h: int) -> float:
    return H.key[H.base[h]]
