"""A worker's own NIC shared by its flows to several parameter servers (ICPE §5).

With M > 1 servers, worker w may receive from (or send to) several PS at once. Each PS link
offers its fair share f_p = rate[l] to every flow; the worker's NIC (bandwidth B) caps their
sum. Water-filling over the worker's flows, smallest f_p first, gives each flow
a_p = min(f_p, what is left / flows left): e.g. alone on ps1 (f = B) but one of n on ps2
(f = B/n), the worker gets B/n from ps2 and only up to B - B/n from ps1, as in the paper.
A flow's weight is a_p / f_p. Re-balancing costs O(W·M) per change, so it is only used when
M > 1; with one PS every flow keeps weight 1 and changes stay O(log n).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..flows import advance, reweight
from ...compiled import core

if TYPE_CHECKING:
    from ..flows import Links


@core
def rebalance_link(LK: Links, l: int, w_changed: int, now: float, seq: int) -> None:
    """Link l's occupancy changed: re-balance every worker with a flow on l, and w_changed."""
    for p in range(LK.n_ps):  # weights are about to change: settle virtual times first
        advance(LK, 2 * p + l % 2, now)
    for v in range(LK.W):
        if v == w_changed or LK.on[l * LK.W + v]:
            rebalance_worker(LK, v, l % 2, seq)


@core
def rebalance_worker(LK: Links, w: int, direction: int, seq: int) -> None:
    """Water-fill worker w's NIC over its active flows in one direction, smallest fair share
    first (ties in PS order): its flows' links are insertion-sorted into ``nic_order``, O(M²)
    compares at worst but in one pass over M links, against one pass per flow."""
    W = LK.W
    k = 0
    for p in range(LK.n_ps):
        l = 2 * p + direction
        if LK.on[l * W + w]:
            j = k
            while j > 0 and LK.rate[LK.nic_order[j - 1]] > LK.rate[l]:
                LK.nic_order[j] = LK.nic_order[j - 1]
                j -= 1
            LK.nic_order[j] = l
            k += 1
    budget = LK.bw_Bps[direction]
    for i in range(k):
        best = LK.nic_order[i]
        share = budget / (k - i)
        fair = LK.rate[best]
        got = fair if fair < share else share
        budget -= got
        weight = got / fair if fair > 0.0 else 1.0
        f = best * W + w
        if abs(weight - LK.weight[f]) > 1e-12 * weight:
            reweight(LK, best, f, weight, seq)
