"""Flow bookkeeping of shared links: virtual time, tags, weights (used by links and policies).

Every flow on link ``l`` is served at ``weight * rate[l]`` bytes/s. Rather than updating every
flow's remaining bytes when the rate changes (O(active flows)), the link keeps a virtual time
``V`` with dV/dt = rate, as in fair queueing: a flow with ``rem`` bytes left and weight ``w``
finishes when V reaches its tag ``V + rem / w``. A rate change only touches V, so it costs
O(1). Flows with weight 0 (waiting, as under FCFS) keep their remaining bytes in ``rem``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..compiled import F64, I64, core
from .heap import Heaps, heap_remove, heap_set, make_heaps


class Links(NamedTuple):
    W: int
    n_ps: int
    policy: int
    bw_Bps: F64
    cap_Bps: F64
    V: F64
    t: F64
    rate: F64
    n: I64
    n_served: I64
    partial: I64
    wsum: F64
    bytes: F64
    weight: F64
    rem: F64
    on: I64
    arrival: I64
    since: F64
    served: Heaps
    waiting: Heaps
    nic_order: I64
    noise: F64
    two_way_table: F64
    two_way_side: int
    base: F64
    join_boost: F64
    join_after_s: F64
    join_delay_s: F64
    boost_due: F64
    stalls: F64
    busy_since: F64
    joined: F64
    joined_now: F64
    joined_after_now: F64


def make_links(n_links: int, n_workers: int, policy: int, bw_Bps, cap_Bps, noise=None,
               two_way=None, join=((1.0, 1.0), (0.0, 0.0), (0.0, 0.0)), stalls=None,
               joined=None) -> Links:
    """``noise``: weights a fair-shared flow draws when it starts (``sharing/fair.py``);
    None: every flow has weight 1. ``two_way``: None, or the (2, side, side) grid of shares a
    NIC direction keeps against flows the other way (``analytic/two_way.TwoWay.grid``); links
    2p and 2p+1 are PS p's downlink and uplink. ``join``: (boosts, after_s, delay_s) of a flow
    that joins a busy link (``sharing/fair.py``), each a pair (downlinks, uplinks); a boost of 1
    is equal sharing. ``boost_due``: when a joiner's delayed boost starts (-1: none pending).
    ``stalls``: None, or the pool of waits of ``sim/stalls.py``. ``joined``: None, or the
    (2, n, 2) pool of (after_s, share) of a lone flow that a flow the other way joined
    (``sharing/fair.py``), n per direction; ``joined_now``/``joined_after_now``: each link's
    current draw. ``busy_since``: when each link's current busy period began."""
    n_flows = n_links * n_workers
    return Links(
        W=n_workers, n_ps=n_links // 2,
        policy=policy,
        bw_Bps=np.asarray(bw_Bps, np.float64),
        cap_Bps=np.asarray(cap_Bps, np.float64),
        V=np.zeros(n_links), t=np.zeros(n_links), rate=np.zeros(n_links),
        n=np.zeros(n_links, np.int64), n_served=np.zeros(n_links, np.int64),
        partial=np.full(n_links, -1, np.int64), wsum=np.zeros(n_links), bytes=np.zeros(n_links),
        weight=np.zeros(n_flows), rem=np.zeros(n_flows), on=np.zeros(n_flows, np.int64),
        arrival=np.zeros(n_flows, np.int64), since=np.zeros(n_flows),
        served=make_heaps(n_links, n_workers, n_flows),
        waiting=make_heaps(n_links, n_workers, n_flows),
        nic_order=np.zeros(n_links, np.int64),
        noise=np.ones(1) if noise is None else np.asarray(noise, np.float64),
        two_way_table=np.ones(1) if two_way is None else np.array(two_way, np.float64).ravel(),
        two_way_side=0 if two_way is None else np.shape(two_way)[1],
        base=np.zeros(n_flows), join_boost=np.array(join[0], np.float64),
        join_after_s=np.array(join[1], np.float64),
        join_delay_s=np.array(join[2], np.float64),
        boost_due=np.full(n_flows, -1.0),
        stalls=np.zeros(2) if stalls is None else np.asarray(stalls, np.float64),
        busy_since=np.zeros(n_links),
        joined=np.array([[(0.0, 1.0)]] * 2 if joined is None else joined, np.float64).ravel(),
        joined_now=np.ones(n_links), joined_after_now=np.zeros(n_links),
    )


@core
def advance(LK: Links, l: int, now: float) -> None:
    """Bring link l's virtual time and byte counter up to ``now``."""
    dt = now - LK.t[l]
    if dt > 0.0:
        dv = LK.rate[l] * dt
        LK.V[l] += dv
        LK.bytes[l] += dv * LK.wsum[l]
    LK.t[l] = now


@core
def serve(LK: Links, l: int, f: int, rem_bytes: float, weight: float, seq: int) -> None:
    """Put flow f into service with ``rem_bytes`` left at ``weight``."""
    if LK.weight[f] == 0.0:
        LK.n_served[l] += 1
        LK.since[f] = LK.t[l]  # when its bytes started to flow (after waiting, under FCFS)
    LK.wsum[l] += weight - LK.weight[f]
    LK.weight[f] = weight
    heap_set(LK.served, l, f, LK.V[l] + rem_bytes / weight, seq)


@core
def remaining(LK: Links, l: int, f: int) -> float:
    """Bytes left of flow f's current chunk (exact at the link's last update)."""
    if LK.weight[f] == 0.0:
        return LK.rem[f]
    return (LK.served.key[LK.served.pos[f]] - LK.V[l]) * LK.weight[f]


@core
def reweight(LK: Links, l: int, f: int, weight: float, seq: int) -> None:
    serve(LK, l, f, remaining(LK, l, f), weight, seq)


@core
def unserve(LK: Links, l: int, f: int) -> None:
    """Take flow f out of service (it keeps no bytes)."""
    if LK.weight[f] > 0.0:
        LK.n_served[l] -= 1
        LK.wsum[l] -= LK.weight[f]
        LK.weight[f] = 0.0
        heap_remove(LK.served, l, f)
    heap_remove(LK.waiting, l, f)
