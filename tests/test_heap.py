"""The indexed heaps of sim/heap.py against a reference: any sequence of inserts, moves,
removals and pops leaves every heap popping in (key, seq) order, with ``pos`` exact."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.sim.heap import heap_pop, heap_remove, heap_set, heap_top, make_heaps

N_HEAPS, N_ITEMS = 3, 12
ops = st.lists(st.tuples(st.sampled_from(["set", "remove", "pop"]), st.integers(0, N_HEAPS - 1),
                         st.integers(0, N_ITEMS - 1), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5])),
               max_size=120)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_heaps_match_a_sorted_reference(steps):
    _check(steps)


def test_long_random_sequences_match_the_reference():
    """Deep heaps (hypothesis's short lists seldom build one): 20 seeded runs of 600 steps."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        kinds = rng.choice(["set", "set", "remove", "pop"], 600)
        _check([(str(k), int(rng.integers(N_HEAPS)), int(rng.integers(N_ITEMS)), float(rng.integers(0, 6)) / 2)
                for k in kinds])


def test_inserts_in_order_pop_from_the_front_and_wrap_around():
    """A queue fed in the order it is served (ordered mode): pops move its head, an insert
    with no room behind the entries moves them back to the first slot, an insert out of
    order turns it into a plain heap; every pop still comes in (key, seq) order."""
    rng = np.random.default_rng(3)
    steps, key = [], 0.0
    for _ in range(400):
        if rng.random() < 0.55:
            key += float(rng.integers(0, 3))  # mostly ascending, ties broken by seq
            steps.append(("set", 0, int(rng.integers(N_ITEMS)), key if rng.random() < 0.95 else key - 5.0))
        else:
            steps.append(("pop", 0, 0, 0.0))
    _check(steps)


def test_an_ordered_queue_pops_without_sifting():
    H = make_heaps(1, 4, 8)
    for seq, item in enumerate((5, 6, 7, 1)):
        heap_set(H, 0, item, float(seq), seq)
    assert [heap_pop(H, 0) for _ in range(2)] == [5, 6] and H.head[0] == 2 and H.ordered[0] == 1
    heap_set(H, 0, 2, 9.0, 9)  # no room behind: the entries move back to slot 0
    assert H.head[0] == 0 and [H.item[i] for i in range(3)] == [7, 1, 2]
    heap_set(H, 0, 3, 0.5, 10)  # out of order: a plain heap from now on
    assert H.ordered[0] == 0 and [heap_pop(H, 0) for _ in range(4)] == [3, 7, 1, 2]
    assert H.head[0] == 0 and H.ordered[0] == 1  # empty: ordered again


def _assert_heaps(H):
    """Every heap's entries lie from base + head on, each parent before its children."""
    for h in range(len(H.size)):
        b, n = H.base[h] + H.head[h], H.size[h]
        assert H.head[h] + n <= H.cap[h]
        for i in range(1, n):
            p = (i - 1) // 2
            assert (H.key[b + p], H.seq[b + p]) < (H.key[b + i], H.seq[b + i])
        if H.ordered[h]:
            assert all((H.key[b + i - 1], H.seq[b + i - 1]) < (H.key[b + i], H.seq[b + i]) for i in range(1, n))


def _check(steps):
    H = make_heaps(N_HEAPS, N_ITEMS, N_ITEMS)
    ref: dict[int, tuple[int, float, int]] = {}  # item -> (heap, key, seq): an item in one heap at a time
    seq = 0
    for op, h, item, key in steps:
        seq += 1
        if op == "set" and ref.get(item, (h,))[0] == h:
            heap_set(H, h, item, key, seq)
            ref[item] = (h, key, seq)
        elif op == "remove" and item in ref:
            heap_remove(H, ref[item][0], item)
            del ref[item]
        elif op == "pop":
            mine = sorted((k, s, i) for i, (g, k, s) in ref.items() if g == h)
            got = heap_pop(H, h)
            assert got == (mine[0][2] if mine else -1)
            ref.pop(got, None)
        for i, (g, k, s) in ref.items():  # every item where pos says, with its key and seq
            slot = H.pos[i]
            assert (H.item[slot], H.key[slot], H.seq[slot]) == (i, k, s)
        _assert_heaps(H)
    for h in range(N_HEAPS):  # draining pops in (key, seq) order
        want = [i for _, _, i in sorted((k, s, i) for i, (g, k, s) in ref.items() if g == h)]
        assert [heap_pop(H, h) for _ in want] == want and heap_top(H, h) == -1
