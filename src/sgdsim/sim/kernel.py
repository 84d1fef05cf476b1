"""The event kernel: a clock and one indexed heap of timers, ordered by (time, seq).

It knows nothing about workers, links or ops: a timer is an integer id that some component
owns. Each timer is pending at most once; rescheduling moves it, which keeps the heap bounded
by the number of timers and avoids stale events.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..compiled import F64, I64, core
from .heap import Heaps, heap_remove, heap_set, heap_top, heap_top_key, heap_top_seq, make_heaps

INF = np.inf


class Kernel(NamedTuple):
    heap: Heaps
    clock: F64
    seq: I64


def make_kernel(n_timers: int) -> Kernel:
    return Kernel(heap=make_heaps(1, n_timers, n_timers), clock=np.zeros(1),
                  seq=np.zeros(2, np.int64))  # [next seq, seq of the timer being handled]


@core
def next_seq(K: Kernel) -> int:
    s = K.seq[0]
    K.seq[0] = s + 1
    return s


@core
def schedule(K: Kernel, timer: int, time: float) -> None:
    """(Re)schedule ``timer`` at absolute ``time``; an infinite time cancels it."""
    if time == INF:
        heap_remove(K.heap, 0, timer)
    else:
        heap_set(K.heap, 0, timer, time, next_seq(K))


@core
def pop_next(K: Kernel) -> int:
    """Advance the clock to the earliest timer and return its id; -1 when nothing is pending.

    The timer stays in the heap until ``retire``: most handlers reschedule the timer they
    were woken by (a resource starts its next chunk), and moving it down from the top costs
    one sift instead of a removal and an insertion."""
    timer = heap_top(K.heap, 0)
    if timer >= 0:
        K.clock[0] = heap_top_key(K.heap, 0)
        K.seq[1] = heap_top_seq(K.heap, 0)
    return timer


@core
def retire(K: Kernel, timer: int) -> None:
    """After ``timer``'s handler: drop it unless the handler rescheduled it (new seq)."""
    p = K.heap.pos[timer]
    if p >= 0 and K.heap.seq[p] == K.seq[1]:
        heap_remove(K.heap, 0, timer)
