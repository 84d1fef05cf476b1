"""Processor sharing: n active flows share B (ICPE §3.1, TPDS Alg. 1 "PS"), optionally unequally.

Every flow is served at weight · B / Σ weights, capped at the flow cap. With equal weights
(the papers' PS) each gets min(cap, B/n). Real TCP flows that start together do not finish
together (``netbench --lab --fanout``): with ``--share-cv`` each flow draws its weight from
``LK.noise``, a pool of seeded lognormal factors, indexed by the flow's arrival sequence
number, so the draw needs no random state in the compiled core. An arrival or departure
changes only the link rate: O(log n).
"""
from __future__ import annotations

from ..flows import serve
from ..jit import jit


@jit
def _set_rate(LK, l):
    if LK.n_served[l] == 0:
        LK.wsum[l] = 0.0  # no drift from adding and removing random weights
    if len(LK.noise) > 1:  # unequal shares (never with a flow cap): weight · B / Σ weights
        LK.rate[l] = LK.bw_Bps[l] / LK.wsum[l] if LK.wsum[l] > 0 else 0.0
        return
    # equal shares; the weights may be NIC shares (sharing/nic.py), so count flows
    share = LK.bw_Bps[l] / LK.n[l] if LK.n[l] > 0 else 0.0
    LK.rate[l] = share if share < LK.cap_Bps[l] else LK.cap_Bps[l]


@jit
def admit(LK, l, f, seq):
    serve(LK, l, f, LK.rem[f], LK.noise[seq % len(LK.noise)], seq)
    _set_rate(LK, l)


@jit
def release(LK, l, f, was_weight, seq):
    _set_rate(LK, l)
