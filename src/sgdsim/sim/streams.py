"""Stream schedulers: which ready op a (worker, resource) serves next, and in what chunks.

Ready ops wait in a per-(worker, resource) priority queue keyed by ``queue_key``; the resource
serves one chunk at a time (Algorithm 3.1: at most one running chunk per worker per resource).

- ``fifo`` (ICPE §3.3, HTTP/2 flow control disabled): whole streams, one after another, in
  transmission order: the op's rank under ``--order`` (profiled, tic, reverse, random).
- ``http2`` (ICPE §3.2.2, Fig. 12): streams are served round-robin in arrival order; a
  stream's first service sends at most WIN bytes, and if bytes remain it goes to the back of
  the queue; its second service sends the rest.

Compute resources always serve ready ops in profile order (one at a time).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..spec.registries import STREAMS
from ..compiled import core
from .kernel import Kernel, next_seq

if TYPE_CHECKING:
    from .plan import Plan
    from .state import State

FIFO = 0
HTTP2 = 1
for _name, _code in (("fifo", FIFO), ("http2", HTTP2)):
    STREAMS.register(_name, _code)


@core
def queue_key(P: Plan, S: State, K: Kernel, w: int, op: int) -> float:
    """Priority of ``op`` in its (worker, resource) queue: smaller is served first."""
    if P.res_shared[P.op_res[op]]:
        return 0.0  # a shared resource serves its workers first come, first served
    if P.res_link[P.op_res[op]] < 0:
        return P.comp_key[op]
    if P.streams == HTTP2:
        return float(next_seq(K))
    return P.rank[S.w_perm[w] * P.n_ops + op]


@core
def chunk_bytes(P: Plan, S: State, i: int) -> float:
    """Bytes of the next chunk of stream ``i`` (= worker * n_ops + op); marks it as served."""
    rem = S.op_rem[i]
    first = S.op_served[i] == 0
    S.op_served[i] = 1
    if P.streams == HTTP2 and first and rem > P.window_bytes:
        return P.window_bytes
    return rem
