"""The event kernel: a clock and one indexed heap of timers, ordered by (time, seq).

It knows nothing about workers, links or ops: a timer is an integer id that some component
owns. Each timer is pending at most once; rescheduling moves it, which keeps the heap bounded
by the number of timers and avoids stale events.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .heap import heap_pop, heap_remove, heap_set, heap_top, heap_top_key, make_heaps
from .jit import jit

INF = np.inf

Kernel = namedtuple("Kernel", "heap clock seq")


def make_kernel(n_timers: int) -> Kernel:
    return Kernel(heap=make_heaps(1, n_timers, n_timers), clock=np.zeros(1), seq=np.zeros(1, np.int64))


@jit
def next_seq(K):
    s = K.seq[0]
    K.seq[0] = s + 1
    return s


@jit
def schedule(K, timer, time):
    """(Re)schedule ``timer`` at absolute ``time``; an infinite time cancels it."""
    if time == INF:
        heap_remove(K.heap, 0, timer)
    else:
        heap_set(K.heap, 0, timer, time, next_seq(K))


@jit
def pop_next(K):
    """Advance the clock to the earliest timer and return its id; -1 when nothing is pending."""
    timer = heap_top(K.heap, 0)
    if timer >= 0:
        K.clock[0] = heap_top_key(K.heap, 0)
        heap_pop(K.heap, 0)
    return timer
