"""Stalls: a TCP transfer that starts against traffic the other way may wait before it moves.

On the lab, two transfers that share a link while a fourth host keeps the other direction
busy leave the link idle in 19-36 % of rounds, for up to 3.5 s (docs/validation/regimes/,
finding 6); with a quiet return path, never. Their acknowledgements queue behind the other
direction's data in the NIC's 50 ms queue and some are lost; the sender then waits for its
retransmission timer, 200 ms and doubling. The two-way rule (``sharing/fair.py``) takes a
mean capacity off a direction; a stall is different: the transfer stops for a random time
while the others on its link take the bandwidth, which moves workers' phases.

Model: a transfer (a flow joining its link) that starts while its NIC's other direction
moves bytes waits, with probability ``stall_prob``, an exponential time of mean
``stall_mean_s`` before its first byte moves (the engine ends the wait on the transfer's
slot timer); each flow moving the other way then pauses with ``stall_incumbent_prob`` for
its own exponential time. Pulls and pushes have their own pairs (``sgdsim.lab.stalls`` fits
them). The draws come from a seeded pool, like the share noise, so the compiled core needs
no random state. A paused flow is served at weight 0, so the fair policy rates links by
weights while stalls are on.
"""
from __future__ import annotations

import numpy as np

from .flows import Links, advance, remaining, serve, unserve
from ..compiled import core

MIN_BYTES = 1e-3  # left of a chunk that has ended, up to rounding
STALL_POOL = 4093  # prime, so its index (the arrival sequence) decorrelates from the noise pool's
NEWCOMER, INCUMBENT = 0, 1


def stall_pool(rng: np.random.Generator, probs, means_s, hit_probs=(0.0, 0.0),
               hit_means_s=(0.0, 0.0), n: int = STALL_POOL) -> np.ndarray | None:
    """Waits, flat for both backends: n each for newcomer pulls, newcomer pushes, incumbent
    pulls and incumbent pushes; 0 for most, exponential for a share ``probs`` of them."""
    pairs = list(zip(probs, means_s)) + list(zip(hit_probs, hit_means_s))
    if not any(p > 0 and m > 0 for p, m in pairs):
        return None
    pool = np.zeros((4, n))
    for row, (p, m) in enumerate(pairs):
        hit = rng.random(n) < p
        pool[row] = np.where(hit, rng.exponential(m, n) if m > 0 else 0.0, 0.0)
    return pool.ravel()


@core
def on(LK: Links) -> bool:
    return len(LK.stalls) > 4


@core
def draw(LK: Links, kind: int, l: int, seq: int) -> float:
    n = len(LK.stalls) // 4
    return LK.stalls[(kind * 2 + (l & 1)) * n + seq % n]


@core
def stall_s(LK: Links, l: int, seq: int, now: float) -> float:
    """How long a transfer starting on link l now waits (0 unless the other direction is
    busy); only when the stalls are ``on``."""
    if not _carries_bytes(LK, l ^ 1, now):
        return 0.0
    return draw(LK, NEWCOMER, l, seq)


@core
def pause(LK: Links, m: int, g: int) -> None:
    """Flow g of link m stops moving bytes (an incumbent hit by a newcomer the other way): it
    stays on the link with its bytes left, like a flow waiting under FCFS."""
    left = remaining(LK, m, g)
    unserve(LK, m, g)
    LK.rem[g] = left


@core
def resume(LK: Links, m: int, g: int, seq: int) -> None:
    """Flow g goes on at its own weight; it keeps its start (``since``) for the join boost."""
    since = LK.since[g]
    serve(LK, m, g, LK.rem[g], LK.base[g], seq)
    LK.since[g] = since


@core
def _carries_bytes(LK: Links, m: int, now: float) -> bool:
    """Whether link m has bytes moving. A flow whose chunk ends at this instant is still
    on the link while the engine releases what that chunk was waited for (a lone worker's
    next pull starts as its push ends): it does not count, nor does a paused one."""
    if LK.n[m] == 0:
        return False
    advance(LK, m, now)
    for v in range(LK.W):
        if moving(LK, m, m * LK.W + v):
            return True
    return False


@core
def moving(LK: Links, m: int, g: int) -> bool:
    """Flow g of link m (brought up to date) is served and has bytes left."""
    return LK.on[g] and LK.weight[g] > 0.0 and remaining(LK, m, g) > MIN_BYTES
