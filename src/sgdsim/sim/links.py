"""Shared network links with exact, event-driven bandwidth sharing.

The link's sharing policy (``sharing/``) decides the rate and which flows are served; the
virtual-time bookkeeping lives in ``flows``. A flow is identified by its worker: a worker has
at most one flow per link (one running chunk per worker per resource), so the flow item of
worker w on link l is ``l * W + w``. A worker that goes on with its next chunk keeps its flow
(and its place under FCFS), as in Algorithm 1 where a worker stays in ``active[r]`` while it
has ops queued on r.
"""
from __future__ import annotations

import numpy as np

from .flows import Links, advance, make_links, serve, unserve  # noqa: F401
from .heap import heap_top, heap_top_key
from ..compiled import core
from .sharing import FCFS, fair, fcfs, nic

POLICY_FCFS = FCFS  # the engine's code of first come first served (sharing/__init__.py)


@core
def add_flow(LK: Links, l: int, w: int, size_bytes: float, now: float, seq: int) -> None:
    """Worker w starts a flow of ``size_bytes`` on link l."""
    advance(LK, l, now)
    f = l * LK.W + w
    LK.on[f] = 1
    LK.n[l] += 1
    if LK.n[l] == 1:
        LK.busy_since[l] = now
        if fair.coupled(LK):  # (links pair up as a NIC's two directions only then)
            fair.draw_joined(LK, l ^ 1, seq)
    LK.arrival[f] = seq
    LK.rem[f] = size_bytes
    LK.weight[f] = 0.0
    if LK.policy == POLICY_FCFS:
        fcfs.admit(LK, l, f, seq)
    else:
        fair.admit(LK, l, f, seq)
        if LK.n_ps > 1:
            nic.rebalance_link(LK, l, w, now, seq)
        _other_direction(LK, l, now, seq)


@core
def continue_flow(LK: Links, l: int, w: int, size_bytes: float, now: float, seq: int) -> None:
    """Worker w's flow, just done with a chunk, goes on with the next chunk without leaving."""
    advance(LK, l, now)
    f = l * LK.W + w
    if LK.weight[f] > 0.0:
        serve(LK, l, f, size_bytes, LK.weight[f], seq)
    else:
        LK.rem[f] = size_bytes


@core
def remove_flow(LK: Links, l: int, w: int, now: float, seq: int) -> None:
    """Worker w's flow leaves link l; the policy hands its share to others."""
    advance(LK, l, now)
    f = l * LK.W + w
    LK.on[f] = 0
    LK.n[l] -= 1
    was_weight = LK.weight[f]
    unserve(LK, l, f)
    if LK.policy == POLICY_FCFS:
        fcfs.release(LK, l, f, was_weight, seq)
    else:
        fair.release(LK, l, f, was_weight, seq)
        if LK.n_ps > 1:
            nic.rebalance_link(LK, l, w, now, seq)
        _other_direction(LK, l, now, seq)


@core
def _other_direction(LK: Links, l: int, now: float, seq: int) -> None:
    """Link l's flow count changed: with two-way coupling, so did its NIC's other direction."""
    if not fair.coupled(LK):
        return
    m = l ^ 1
    advance(LK, m, now)
    fair.set_rate(LK, m)
    if LK.n_ps > 1:
        nic.rebalance_link(LK, m, -1, now, seq)


@core
def next_flow(LK: Links, l: int) -> int:
    """The flow that finishes first on link l (-1 if none is served)."""
    return heap_top(LK.served, l)


@core
def next_time(LK: Links, l: int) -> float:
    """Absolute time at which the first served flow finishes (inf if none)."""
    if LK.served.size[l] == 0 or LK.rate[l] <= 0.0:
        return np.inf
    dv = heap_top_key(LK.served, l) - LK.V[l]
    if dv < 0.0:
        dv = 0.0
    return LK.t[l] + dv / LK.rate[l]
