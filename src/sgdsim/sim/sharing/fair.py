"""Processor sharing: n active flows share B (ICPE §3.1, TPDS Alg. 1 "PS"), optionally unequally.

Every flow is served at weight · B / Σ weights, capped at the flow cap. With equal weights
(the papers' PS) each gets min(cap, B/n). Real TCP flows that start together do not finish
together (``netbench --lab --fanout``): with ``--share-cv`` each flow draws its weight from
``LK.noise``, a pool of seeded lognormal factors, indexed by the flow's arrival sequence
number, so the draw needs no random state in the compiled core. An arrival or departure
changes only the link rate: O(log n).

Two-way traffic: a NIC direction carrying n flows while the other direction carries m keeps
``LK.two_way_table[d, n, m]`` of its bandwidth (d = l & 1: a PS's downlink or uplink), the
measured table or the one-number rule of ``analytic/two_way.py`` laid out as one grid (the
minority direction's ACKs queue behind the majority's data; Zhang, Shenker & Clark, "the
effects of two-way traffic", SIGCOMM 1991; docs/validation/async/two-way.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..flows import reweight, serve
from ...compiled import core
from ..stalls import on as stalls_on

if TYPE_CHECKING:
    from ..flows import Links


@core
def coupled(LK: Links) -> bool:
    """Whether a link's rate depends on the flows in its NIC's other direction."""
    return LK.two_way_side > 0


@core
def two_way_factor(LK: Links, l: int) -> float:
    """The share of link l's bandwidth its direction keeps against the other direction's flows."""
    side = LK.two_way_side
    if side == 0:
        return 1.0
    n, m = LK.n[l], LK.n[l ^ 1]
    if n == 1 and m == 1 and joined_due(LK, l) <= LK.t[l]:
        return LK.joined_now[l]
    last = side - 1  # the grid covers every worker; clamp for safety
    return LK.two_way_table[((l & 1) * side + (n if n < last else last)) * side + (m if m < last else last)]


@core
def joined_due(LK: Links, l: int) -> float:
    """When link l's lone flow, joined by one flow the other way, drops to its ``joined``
    share; inf when that does not apply.

    On the lab a pull that a push joins keeps its rate for ~0.4 s, then loses it while the
    push runs (to about 0.6 of the link after a second), and recovers at once when the push
    ends; a pull that joins a running push loses nothing (docs/validation/regimes/, finding
    9). So the order of the two busy periods decides, not the flows' counts alone: the table
    holds the second case, the joined share and its delay (``draw_joined``) the first. Called
    with one flow each way."""
    if LK.joined_now[l] == 1.0 or LK.busy_since[l ^ 1] <= LK.busy_since[l]:
        return np.inf
    return LK.busy_since[l ^ 1] + LK.joined_after_now[l]


@core
def draw_joined(LK: Links, l: int, seq: int) -> None:
    """A busy period starts the other way: link l's (after_s, share) if it is joined now.

    The lab's joined pulls do not all slow alike (0.25-1.0 s, then 0.48-0.84 of the link at
    200 Mbit/s): each join draws one measured pair from ``LK.joined``, a seeded pool indexed
    by the arrival's sequence number like the share noise; a pool of one pair is the fixed step."""
    n = len(LK.joined) // 4
    k = 2 * ((l & 1) * n + seq % n)
    LK.joined_after_now[l] = LK.joined[k]
    LK.joined_now[l] = LK.joined[k + 1]


@core
def set_rate(LK: Links, l: int) -> None:
    if LK.n_served[l] == 0:
        LK.wsum[l] = 0.0  # no drift from adding and removing random weights
    bw = LK.bw_Bps[l] * two_way_factor(LK, l)
    if weighted(LK):  # unequal shares (never with a flow cap): weight · B / Σ weights
        LK.rate[l] = bw / LK.wsum[l] if LK.wsum[l] > 0 else 0.0
        return
    # equal shares; the weights may be NIC shares (sharing/nic.py), so count flows
    share = bw / LK.n[l] if LK.n[l] > 0 else 0.0
    LK.rate[l] = share if share < LK.cap_Bps[l] else LK.cap_Bps[l]


@core
def weighted(LK: Links) -> bool:
    # with stalls a paused flow stays counted in n but moves nothing: rate by weights
    return len(LK.noise) > 1 or LK.join_boost[0] != 1.0 or LK.join_boost[1] != 1.0 or stalls_on(LK)


@core
def admit(LK: Links, l: int, f: int, seq: int) -> None:
    LK.base[f] = LK.noise[seq % len(LK.noise)]
    boost = _join_boost(LK, l, f, seq) if LK.join_boost[l & 1] != 1.0 else 1.0
    serve(LK, l, f, LK.rem[f], LK.base[f] * boost, seq)
    set_rate(LK, l)


@core
def _join_boost(LK: Links, l: int, f: int, seq: int) -> float:
    """The joiner's factor, after every incumbent goes back to its own weight.

    A TCP flow that joins a link whose flows have run past their start-up gets more than its
    share until one of them ends (docs/validation/regimes/, finding 5): ``join_boost[d]`` when
    the youngest incumbent started at least ``join_after_s[d]`` ago, 1 otherwise, d = l & 1
    (pulls and pushes differ: at 100 Mbit/s only pulls have it). Only the latest
    joiner holds the advantage: O(W log W) per arrival, only when the boost is on.

    With ``join_delay_s[d]`` > 0 the joiner first shares equally: the advantage comes from its
    slow start overshooting the queue, which takes a few round trips (finding 8: ~0.09 s for
    pulls at 100 and 200 Mbit/s). It is due then (``boost_due``; the engine's timer calls
    ``apply_due_boost``), so a transfer that joins one about to end takes nothing from it.
    """
    youngest = -1.0
    for v in range(LK.W):
        g = l * LK.W + v
        if g != f and LK.weight[g] > 0.0:
            youngest = LK.since[g] if LK.since[g] > youngest else youngest
            if LK.weight[g] != LK.base[g]:
                reweight(LK, l, g, LK.base[g], seq)
        LK.boost_due[g] = -1.0  # every pending boost of the link, the joiner's own included
    if youngest >= 0.0 and LK.t[l] - youngest >= LK.join_after_s[l & 1]:
        if LK.join_delay_s[l & 1] > 0.0:
            LK.boost_due[f] = LK.t[l] + LK.join_delay_s[l & 1]
            return 1.0
        return LK.join_boost[l & 1]
    return 1.0


@core
def apply_due_boost(LK: Links, l: int, f: int, seq: int) -> bool:
    """Flow f's delayed boost comes due: it takes it unless a later arrival cancelled it."""
    if LK.boost_due[f] < 0.0 or LK.weight[f] <= 0.0:
        return False
    LK.boost_due[f] = -1.0
    reweight(LK, l, f, LK.base[f] * LK.join_boost[l & 1], seq)
    set_rate(LK, l)
    return True


@core
def release(LK: Links, l: int, f: int, was_weight: float, seq: int) -> None:
    set_rate(LK, l)
