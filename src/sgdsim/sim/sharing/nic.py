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
    """Water-fill worker w's NIC over its active flows in one direction."""
    W = LK.W
    left = 0
    for p in range(LK.n_ps):
        l = 2 * p + direction
        LK.nic_done[l] = 0
        if LK.on[l * W + w]:
            left += 1
    if left == 0:
        return
    budget = LK.bw_Bps[direction]
    while left > 0:
        best = -1
        for p in range(LK.n_ps):  # the unassigned flow with the smallest fair share
            l = 2 * p + direction
            if LK.on[l * W + w] and LK.nic_done[l] == 0:
                if best < 0 or LK.rate[l] < LK.rate[best]:
                    best = l
        share = budget / left
        fair = LK.rate[best]
        got = fair if fair < share else share
        LK.nic_done[best] = 1
        budget -= got
        left -= 1
        weight = got / fair if fair > 0.0 else 1.0
        f = best * W + w
        if abs(weight - LK.weight[f]) > 1e-12 * weight:
            reweight(LK, best, f, weight, seq)
