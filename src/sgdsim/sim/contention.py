"""Compute slowed by other workers on the same host (``topology/hosts.py``).

While other workers on its host pull or push, a worker's compute runs at 1 / (1 + a·pulling +
b·pushing) of its speed (``S.contention`` = (a, b, K)); while n workers compute on its K shared
cores (K > 0), at most K / n of it (processor sharing). A running compute op is re-timed from
the work it has left whenever a count changes. Off (a = b = K = 0) unless the cluster states it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..compiled import core
from .kernel import Kernel, schedule

if TYPE_CHECKING:
    from .plan import Plan
    from .state import State


@core
def contended(S: State) -> bool:
    return S.contention[0] > 0.0 or S.contention[1] > 0.0 or S.contention[2] > 0.0


@core
def cores_shared(S: State) -> bool:
    return S.contention[2] > 0.0


@core
def computing(S: State, step: int) -> None:
    """A worker's compute op started (+1) or ended (−1) on the shared cores."""
    S.transferring[2] += step


@core
def moved(S: State, l: int, w: int, step: int) -> None:
    """Worker w's flows on PS links of l's direction (0: downlinks, 1: uplinks) went up or down
    by one: the count of workers with any (``S.transferring``) follows, O(1) per flow."""
    d = l & 1
    before = S.moving[w * 2 + d]
    S.moving[w * 2 + d] = before + step
    if before == 0 or before + step == 0:
        S.transferring[d] += step


@core
def compute_speed(S: State, w: int) -> float:
    """Worker w's compute speed while the other workers on its host transfer: 1 / (1 + a·pulling
    + b·pushing), counting each other worker with a flow on a PS downlink, on an uplink; times
    K / n while n > K workers compute on the K shared cores."""
    others_pulling = S.transferring[0] - (1 if S.moving[w * 2] > 0 else 0)
    others_pushing = S.transferring[1] - (1 if S.moving[w * 2 + 1] > 0 else 0)
    speed = 1.0 / (1.0 + S.contention[0] * others_pulling + S.contention[1] * others_pushing)
    n = S.transferring[2]
    if S.contention[2] > 0.0 and n > S.contention[2]:
        speed *= S.contention[2] / n
    return speed


@core
def restretch(P: Plan, S: State, K: Kernel, now: float) -> None:
    """A transfer started or ended: every running compute op goes on at its new speed, its end
    re-timed from the work it has left."""
    for v in range(P.W):
        slot = v * P.R
        if S.run_op[slot] >= 0:
            left = S.c_work[slot] - (now - S.c_since[slot]) * S.c_speed[slot]
            S.c_work[slot] = left if left > 0.0 else 0.0
            S.c_since[slot] = now
            S.c_speed[slot] = compute_speed(S, v)
            schedule(K, slot, now + S.c_work[slot] / S.c_speed[slot])
