"""Processor sharing: n active flows each get min(cap, B/n) (ICPE §3.1, TPDS Alg. 1 "PS").

All weights are 1, so an arrival or departure changes only the link rate: O(log n).
"""
from __future__ import annotations

from ..flows import serve
from ..jit import jit


@jit
def _set_rate(LK, l):
    n = LK.n[l]
    share = LK.bw_Bps[l] / n if n > 0 else 0.0
    LK.rate[l] = share if share < LK.cap_Bps[l] else LK.cap_Bps[l]


@jit
def admit(LK, l, f, seq):
    serve(LK, l, f, LK.rem[f], 1.0, seq)
    _set_rate(LK, l)


@jit
def release(LK, l, f, was_weight, seq):
    _set_rate(LK, l)
