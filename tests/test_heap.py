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
            slot = H.base[g] + H.pos[i]
            assert (H.item[slot], H.key[slot], H.seq[slot]) == (i, k, s)
    for h in range(N_HEAPS):  # draining pops in (key, seq) order
        want = [i for _, _, i in sorted((k, s, i) for i, (g, k, s) in ref.items() if g == h)]
        assert [heap_pop(H, h) for _ in want] == want and heap_top(H, h) == -1
