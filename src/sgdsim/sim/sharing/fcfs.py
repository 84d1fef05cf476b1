"""First come, first served (TPDS Alg. 1 "FCFS"), generalised to per-flow caps (TPDS §4.4).

Flows are served in arrival order. Without a cap the earliest flow gets the whole bandwidth B.
With a cap c < B, the first floor(B/c) flows get c each and the next one the remainder
B - floor(B/c)·c (its "partial" weight); later flows wait. Each arrival or departure changes
the weight of at most two flows: O(log n).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..flows import reweight, serve
from ..heap import heap_pop, heap_set
from ...compiled import core

if TYPE_CHECKING:
    from ..flows import Links


@core
def _slots(LK: Links, l: int) -> tuple[int, float]:
    """(number of full-rate slots, weight of the partial slot or 0)."""
    ratio = LK.bw_Bps[l] / LK.cap_Bps[l]
    full = int(ratio + 1e-9)
    part = ratio - full
    if part < 1e-9:
        part = 0.0
    return full, part


@core
def admit(LK: Links, l: int, f: int, seq: int) -> None:
    LK.rate[l] = LK.cap_Bps[l]
    full, part = _slots(LK, l)
    has_partial = LK.partial[l] >= 0
    n_full = LK.n_served[l] - (1 if has_partial else 0)
    if n_full < full and not has_partial:
        serve(LK, l, f, LK.rem[f], 1.0, seq)
    elif part > 0.0 and not has_partial:
        serve(LK, l, f, LK.rem[f], part, seq)
        LK.partial[l] = f
    else:
        heap_set(LK.waiting, l, f, float(LK.arrival[f]), seq)


@core
def release(LK: Links, l: int, f: int, was_weight: float, seq: int) -> None:
    if was_weight == 0.0:
        return  # it was waiting: nobody's share changes
    full, part = _slots(LK, l)
    g = LK.partial[l]
    if g == f:
        LK.partial[l] = -1
        _promote(LK, l, part, seq)
    elif g >= 0:
        # the partial flow is next in arrival order: it takes the freed full slot
        LK.partial[l] = -1
        reweight(LK, l, g, 1.0, seq)
        _promote(LK, l, part, seq)
    else:
        _promote(LK, l, 1.0, seq)


@core
def _promote(LK: Links, l: int, weight: float, seq: int) -> None:
    """Serve the earliest waiting flow at ``weight`` (if any)."""
    if weight <= 0.0:
        return
    g = heap_pop(LK.waiting, l)
    if g >= 0:
        serve(LK, l, g, LK.rem[g], weight, seq)
        if weight < 1.0:
            LK.partial[l] = g
