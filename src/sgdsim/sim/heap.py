"""Indexed binary min-heaps stored in flat arrays, many heaps sharing one set of arrays.

Used for the kernel's timers, each link's flows (ordered by virtual finish tag) and each
(worker, resource) ready queue. An entry is (key, seq, item): ties on key are broken by seq so
runs are deterministic. ``pos[item]`` is the slot of item in the arrays (-1 when absent),
which gives O(log n) update and removal of any item.

Heap ``h`` owns slots ``base[h] .. base[h] + cap[h]`` (``capacities[h]`` where given); its
``size[h]`` entries start ``head[h]`` slots in. A ready queue mostly receives its items in
the order it serves them (a step's pulls, a backward pass's pushes): while every insert comes
after the last entry (``ordered[h]``), the entries stay sorted, which is also a heap, and a
pop takes the first one by moving ``head`` instead of sifting the last entry down from the
root. The first insert out of order ends that until the heap is empty again. Any order of
(key, seq) pops the same items in the same order: only the cost differs.
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
    head: I64
    cap: I64
    ordered: I64


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
        head=np.zeros(n_heaps, np.int64),
        cap=caps.copy(),
        ordered=np.ones(n_heaps, np.int64),
    )


@core
def _first(H: Heaps, h: int) -> int:
    """The slot of heap h's first entry (its top)."""
    return H.base[h] + H.head[h]


@core
def _before(ka: float, sa: int, kb: float, sb: int) -> bool:
    """(ka, sa) comes before (kb, sb): the heaps' order, ties on key broken by seq."""
    return ka < kb or (ka == kb and sa < sb)


@core
def _put(H: Heaps, b: int, i: int, key: float, seq: int, item: int) -> None:
    H.key[b + i] = key
    H.seq[b + i] = seq
    H.item[b + i] = item
    H.pos[item] = b + i


@core
def _sift_up(H: Heaps, b: int, i: int, key: float, seq: int, item: int) -> None:
    """Place (key, seq, item) at slot i or above: parents larger than it move down into the
    hole it leaves, one write each, instead of swapping at every level."""
    while i > 0:
        parent = (i - 1) >> 1
        kp = H.key[b + parent]
        if _before(key, seq, kp, H.seq[b + parent]):
            _put(H, b, i, kp, H.seq[b + parent], H.item[b + parent])
            i = parent
        else:
            break
    _put(H, b, i, key, seq, item)


@core
def _sift_down(H: Heaps, b: int, n: int, i: int, key: float, seq: int, item: int) -> None:
    """Place (key, seq, item) at slot i or below, the smaller child moving up at each level.
    The child is chosen by arithmetic, not a branch: which child is smaller is a coin toss
    the processor cannot predict."""
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n:
            kl = H.key[b + c]
            kr = H.key[b + c + 1]
            right: int = (kr < kl) | ((kr == kl) & (H.seq[b + c + 1] < H.seq[b + c]))
            c += right
        kc = H.key[b + c]
        if _before(kc, H.seq[b + c], key, seq):
            _put(H, b, i, kc, H.seq[b + c], H.item[b + c])
            i = c
        else:
            break
    _put(H, b, i, key, seq, item)


@core
def _place(H: Heaps, b: int, n: int, i: int, key: float, seq: int, item: int) -> None:
    """Put (key, seq, item) into the hole at slot i of a heap of n entries: up if it is
    smaller than its parent, else down."""
    if i > 0:
        parent = (i - 1) >> 1
        kp = H.key[b + parent]
        if _before(key, seq, kp, H.seq[b + parent]):
            _sift_up(H, b, i, key, seq, item)
            return
    _sift_down(H, b, n, i, key, seq, item)


@core
def heap_set(H: Heaps, h: int, item: int, key: float, seq: int) -> None:
    """Insert ``item`` with (key, seq), or move it there if already present."""
    n = H.size[h]
    p = H.pos[item]
    if p >= 0:
        H.ordered[h] = 0  # a moved entry may land anywhere
        b = _first(H, h)
        _place(H, b, n, p - b, key, seq, item)
        return
    if H.head[h] + n == H.cap[h]:
        _compact(H, h)
    b = _first(H, h)
    H.size[h] = n + 1
    if H.ordered[h]:
        if n == 0 or _before(H.key[b + n - 1], H.seq[b + n - 1], key, seq):
            _put(H, b, n, key, seq, item)
            return
        H.ordered[h] = 0
    _sift_up(H, b, n, key, seq, item)


@core
def _compact(H: Heaps, h: int) -> None:
    """Move heap h's entries back to its first slot: pops from the front left no room behind."""
    b, d = H.base[h], H.head[h]
    for i in range(H.size[h]):
        _put(H, b, i, H.key[b + d + i], H.seq[b + d + i], H.item[b + d + i])
    H.head[h] = 0


@core
def heap_remove(H: Heaps, h: int, item: int) -> None:
    """Remove ``item`` if present."""
    p = H.pos[item]
    if p < 0:
        return
    H.pos[item] = -1
    last = H.size[h] - 1
    H.size[h] = last
    if last == 0:  # empty: start again at the first slot, in order
        H.head[h] = 0
        H.ordered[h] = 1
        return
    b = _first(H, h)
    i = p - b
    if H.ordered[h] and i == 0:  # the first of a sorted run: the rest is sorted, and a heap
        H.head[h] += 1
        return
    if i == last:  # the last entry: the rest keeps its order
        return
    H.ordered[h] = 0
    _place(H, b, last, i, H.key[b + last], H.seq[b + last], H.item[b + last])


@core
def heap_pop(H: Heaps, h: int) -> int:
    """Remove and return the item with the smallest (key, seq); -1 when empty."""
    if H.size[h] == 0:
        return -1
    item = H.item[_first(H, h)]
    heap_remove(H, h, item)
    return item


@core
def heap_top(H: Heaps, h: int) -> int:
    """The item with the smallest (key, seq) without removing it; -1 when empty."""
    if H.size[h] == 0:
        return -1
    return H.item[_first(H, h)]


@core
def heap_top_key(H: Heaps, h: int) -> float:
    return H.key[_first(H, h)]


@core
def heap_top_seq(H: Heaps, h: int) -> int:
    return H.seq[_first(H, h)]
