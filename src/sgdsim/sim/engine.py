"""Discrete-event simulation of W workers running a step DAG (ICPE Alg. 3.1, TPDS Alg. 1).

Resources per worker: ``0`` = worker compute, and per parameter server p: ``1+3p`` downlink,
``2+3p`` uplink, ``3+3p`` PS compute. Compute resources are exclusive per worker (Share = 1);
downlink/uplink of PS p are shared links (``links``) unless the plan maps them to exclusive
resources (all-reduce). A ``res_shared`` resource (a server's CPU, ``spec.Host``) is one that
all workers queue for, in worker 0's slot, whose ``run_op`` is the item ``w*n_ops + op``. Kernel timers: ``w*R + r`` for exclusive resource r of worker w (for a
link resource, the end of a stalled transfer's wait, ``stalls.py``), then ``W*R + l`` for link l,
``W*R + L + w`` for worker w's first step and ``W*R + L + W + l`` for the moment link l's lone
flow drops to its ``joined`` share (``sharing/fair.py``).

Everything here works on flat arrays so the same code runs compiled (``compiled.py``) or as Python.
``P`` is the read-only plan (``plan.py``), ``S`` the mutable state (``state.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..compiled import F64, core, core_inline
from .flows import Links
from .heap import Heaps, heap_pop, heap_set
from .kernel import Kernel, next_seq, pop_next, retire, schedule
from .contention import computing, contended, compute_speed, cores_shared, moved, restretch
from .links import add_flow, advance, continue_flow, next_flow, next_time, remove_flow
from .sharing.fair import apply_due_boost, coupled, joined_due, set_rate
from .stalls import INCUMBENT, draw, moving, pause, resume, stall_s
from .stalls import on as stalls_on
from .streams import chunk_bytes, queue_key

if TYPE_CHECKING:
    from .plan import Plan
    from .state import State

# counters in S.ctr
C_OPS, C_COMPLETIONS, C_SYNC, C_TIMELINE, C_REFILL = 0, 1, 2, 3, 4

DONE, STALLED, TIMELINE_FULL, BUDGET, REFILL = 0, 1, 2, 3, 4


@core
def run(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, target_completions: int, max_ops: int) -> int:
    """Process events until ``target_completions`` steps completed in total (or a limit)."""
    while S.ctr[C_COMPLETIONS] < target_completions:
        if S.ctr[C_OPS] >= max_ops:
            return BUDGET
        if S.tl_on[0] and S.ctr[C_TIMELINE] >= len(S.tl_w) - 1:
            return TIMELINE_FULL
        if S.ctr[C_REFILL]:
            return REFILL
        timer = pop_next(K)
        if timer < 0:
            return STALLED
        _event(P, S, K, LK, Q, timer, K.clock[0])
        retire(K, timer)
    return DONE


@core
def start(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, offsets: F64) -> None:
    """Start every worker's first step, worker w at ``offsets[w]`` (seconds). Workers due at 0
    go first, in worker order, before any other event (their timers are the first scheduled)."""
    first = P.W * P.R + len(P.link_res)
    for w in range(P.W):
        schedule(K, first + w, offsets[w])


@core
def open_window(P: Plan, S: State, K: Kernel, LK: Links) -> None:
    """Start measuring: busy times and link bytes count from now on."""
    now = K.clock[0]
    S.win[0] = now
    for i in range(len(S.busy)):
        S.busy[i] = 0.0
    sync_links(S, LK, now)
    for l in range(len(S.bytes0)):
        S.bytes0[l] = LK.bytes[l]


@core
def sync_links(S: State, LK: Links, now: float) -> None:
    for l in range(len(S.bytes0)):
        advance(LK, l, now)


@core_inline
def _event(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, timer: int, now: float) -> None:
    """One timer: an exclusive resource's op ends, a stall ends, a link's first flow ends a
    chunk, or a worker's delayed first step starts. Each handler is called from one place and
    inlined (``core_inline``): a call site is a copy of its code."""
    WR = P.W * P.R
    if timer >= WR + len(P.link_res):  # rare: a first step, or a joined share comes due
        if timer >= WR + len(P.link_res) + P.W:
            _rerate(P, K, LK, timer - WR - len(P.link_res) - P.W, now)
        else:
            _start_step(P, S, K, LK, Q, timer - WR - len(P.link_res), now)
        return
    if timer < WR:
        w = timer // P.R
        r = timer - w * P.R
        l = P.res_link[r]
        if l >= 0:  # a link's slot timer ends a stall (stalls.py) or starts a delayed boost
            if LK.on[l * P.W + w]:
                _slot_on_link(P, K, LK, l, w, now)
            else:
                _join_link(P, S, K, LK, l, w, S.run_bytes[timer], now)
            return
        done = S.run_op[timer]
        if P.res_shared[r]:  # the item says whose op it is
            w, done = done // P.n_ops, done % P.n_ops
        _chunk_end(S, timer, w, r, done, now)
        if r == 0 and cores_shared(S):
            computing(S, -1)  # one fewer computes: the others speed up (below, unless w goes on)
        l = -1
    else:
        l = timer - WR
        w, r, done = _link_chunk_end(P, S, K, LK, Q, l, now)
    if done >= 0:
        _complete_op(P, S, K, LK, Q, w, done, now)
    _try_start(P, S, K, LK, Q, w, r, now)
    if l < 0 and r == 0 and cores_shared(S) and S.run_op[w * P.R] < 0:
        restretch(P, S, K, now)
    if l >= 0 and S.run_op[w * P.R + r] < 0:  # else it went on with the next chunk, re-timing l
        if LK.join_delay_s[l & 1] > 0.0:  # a boost timer may still be pending: it must not fire
            schedule(K, w * P.R + r, np.inf)
        remove_flow(LK, l, w, now, next_seq(K))
        if contended(S):
            moved(S, l, w, -1)
            restretch(P, S, K, now)
        _reschedule(P, K, LK, l, now, True)


@core_inline
def _link_chunk_end(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, l: int, now: float) -> tuple[int, int, int]:
    """Link l's first flow ended its chunk: (worker, resource, the op if it is done, else -1)."""
    advance(LK, l, now)
    w = next_flow(LK, l) - l * P.W
    r = P.link_res[l]
    slot = w * P.R + r
    op = S.run_op[slot]
    since = LK.since[l * P.W + w]
    if since > S.run_start[slot]:
        S.run_start[slot] = since  # the timeline shows transmission, not waiting
    _chunk_end(S, slot, w, r, op, now)
    i = w * P.n_ops + op
    S.op_rem[i] -= S.run_bytes[slot]
    S.sent[l] += S.run_bytes[slot]
    if S.op_rem[i] > 1e-9 * (1.0 + P.op_size[op]):
        _enqueue(P, S, K, Q, w, op)  # HTTP/2: back of the queue for its second service
        return w, r, -1
    S.op_rem[i] = 0.0
    return w, r, op


@core_inline
def _chunk_end(S: State, slot: int, w: int, r: int, op: int, now: float) -> None:
    start_t = S.run_start[slot]
    S.busy[slot] += now - (start_t if start_t > S.win[0] else S.win[0])
    S.run_op[slot] = -1
    if S.tl_on[0]:
        k = S.ctr[C_TIMELINE]
        S.tl_w[k] = w
        S.tl_r[k] = r
        S.tl_op[k] = op
        S.tl_t0[k] = start_t
        S.tl_t1[k] = now
        S.tl_step[k] = S.w_steps[w]
        S.ctr[C_TIMELINE] = k + 1


@core_inline
def _complete_op(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, w: int, op: int, now: float) -> None:
    """Release ``op``'s dependents; finish the step when it was the last op."""
    S.ctr[C_OPS] += 1
    S.w_left[w] -= 1
    base = w * P.n_ops
    lo, hi = P.succ_ptr[op], P.succ_ptr[op + 1]
    for k in range(lo, hi):  # enqueue every released op before starting any
        d = P.succ_idx[k]
        S.waiting[base + d] -= 1
        if S.waiting[base + d] == 0:
            if P.instant[d]:  # a zero-time sink: done now (plan._instant)
                S.waiting[base + d] = -1
                S.ctr[C_OPS] += 1
                S.w_left[w] -= 1
            else:
                _enqueue(P, S, K, Q, w, d)
    for k in range(lo, hi):
        d = P.succ_idx[k]
        if S.waiting[base + d] == 0:
            _try_start(P, S, K, LK, Q, w, P.op_res[d], now)
    if S.w_left[w] == 0:
        _step_done(P, S, K, LK, Q, w, now)


@core_inline
def _enqueue(P: Plan, S: State, K: Kernel, Q: Heaps, w: int, op: int) -> None:
    key = queue_key(P, S, K, w, op)
    heap_set(Q, _slot(P, w, P.op_res[op]), w * P.n_ops + op, key, next_seq(K))


@core_inline
def _slot(P: Plan, w: int, r: int) -> int:  # worker w's slot of resource r: its own, or worker 0's when shared
    return r if P.res_shared[r] else w * P.R + r


@core_inline
def _try_start(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, w: int, r: int, now: float) -> None:
    """Start the next chunk on (w, r) if the resource is idle and something is queued. Most
    calls find it busy or its queue empty: that test is inlined, the start is not."""
    slot = _slot(P, w, r)
    if S.run_op[slot] < 0 and Q.size[slot] > 0:
        _start_next(P, S, K, LK, Q, w, r, slot, now)


@core
def _start_next(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, w: int, r: int, slot: int, now: float) -> None:
    """Pop (w, r)'s next ready chunk and start it: a compute op's timer, or its transfer."""
    item = heap_pop(Q, slot)
    if P.res_shared[r]:  # whoever is first in the shared queue; the slot keeps the item
        w = item // P.n_ops
    op = item - w * P.n_ops
    S.run_op[slot] = item if P.res_shared[r] else op
    S.run_start[slot] = now
    l = P.res_link[r]
    if l < 0:
        d = P.dur[S.w_row[w] * P.n_ops + op]
        if r == 0 and contended(S):  # the worker's compute, on a host others transfer through
            S.c_work[slot], S.c_since[slot], S.c_speed[slot] = d, now, 1.0
            if cores_shared(S):  # one more computes: every running compute op is re-timed
                computing(S, 1)
                restretch(P, S, K, now)
                return
            S.c_speed[slot] = compute_speed(S, w)
            d /= S.c_speed[slot]
        schedule(K, slot, now + d)
        return
    size = chunk_bytes(P, S, item)
    S.run_bytes[slot] = size
    if LK.on[l * P.W + w] == 0:
        if stalls_on(LK):  # (a sequence number drawn only then: the share noise is indexed by them)
            wait = stall_s(LK, l, next_seq(K), now)
            if wait > 0.0:  # the transfer stalls before it joins: its slot's own timer ends that
                schedule(K, slot, now + wait)
                return
        _join_link(P, S, K, LK, l, w, size, now)
        return
    continue_flow(LK, l, w, size, now, next_seq(K))
    _reschedule(P, K, LK, l, now, False)


@core  # not inlined: two call sites, one of them inside the inlined _try_start
def _join_link(P: Plan, S: State, K: Kernel, LK: Links, l: int, w: int, size: float, now: float) -> None:
    add_flow(LK, l, w, size, now, next_seq(K))
    if contended(S):
        moved(S, l, w, 1)
        restretch(P, S, K, now)
    _reschedule(P, K, LK, l, now, True)
    if LK.boost_due[l * P.W + w] >= 0.0:
        schedule(K, w * P.R + P.link_res[l], LK.boost_due[l * P.W + w])
    if stalls_on(LK):
        _hit_incumbents(P, K, LK, l ^ 1, now)
    m = l ^ 1
    if coupled(LK) and LK.n[l] == 1 and LK.n[m] > 0:  # l's busy period began: m's flows are joined
        due = joined_due(LK, m)
        if now < due < np.inf:  # (due now: set_rate has applied it already)
            schedule(K, P.W * P.R + len(P.link_res) + P.W + m, due)


@core
def _rerate(P: Plan, K: Kernel, LK: Links, l: int, now: float) -> None:
    """Link l's lone flow may drop to its joined share now (``fair.joined_due``)."""
    advance(LK, l, now)
    set_rate(LK, l)
    _reschedule(P, K, LK, l, now, False)


@core
def _hit_incumbents(P: Plan, K: Kernel, LK: Links, m: int, now: float) -> None:
    """A transfer joined the other direction of link m: each flow moving on m may stall, its
    wait ended by its slot's timer (stalls.py)."""
    advance(LK, m, now)
    hit = False
    for v in range(P.W):
        g = m * P.W + v
        if moving(LK, m, g):
            wait = draw(LK, INCUMBENT, m, next_seq(K))
            if wait > 0.0:
                pause(LK, m, g)
                schedule(K, v * P.R + P.link_res[m], now + wait)
                hit = True
    if hit:
        set_rate(LK, m)
        _reschedule(P, K, LK, m, now, False)


@core
def _slot_on_link(P: Plan, K: Kernel, LK: Links, l: int, w: int, now: float) -> None:
    """The slot timer of a flow on link l: its stall ends, or its delayed boost comes due, or
    both (a boost that came due while it was paused applies when it resumes)."""
    f = l * P.W + w
    advance(LK, l, now)
    if LK.weight[f] == 0.0:  # paused: a stall ends; a boost that came due meanwhile applies now
        _resume_flow(P, K, LK, l, w, now)
        if LK.boost_due[f] > now:
            schedule(K, w * P.R + P.link_res[l], LK.boost_due[f])
            return
    if apply_due_boost(LK, l, f, next_seq(K)):
        _reschedule(P, K, LK, l, now, False)


@core
def _resume_flow(P: Plan, K: Kernel, LK: Links, l: int, w: int, now: float) -> None:
    advance(LK, l, now)
    resume(LK, l, l * P.W + w, next_seq(K))
    set_rate(LK, l)
    _reschedule(P, K, LK, l, now, False)


@core_inline
def _reschedule(P: Plan, K: Kernel, LK: Links, l: int, now: float, count_changed: bool) -> None:
    """Re-time link l after a change; when its flow count changed, with two-way coupling, also
    its NIC's other direction (whose rate depends on that count)."""
    if LK.n_ps > 1:
        _reschedule_links(P, K, LK, now)
        return
    schedule(K, P.W * P.R + l, next_time(LK, l))
    if count_changed and coupled(LK):
        schedule(K, P.W * P.R + (l ^ 1), next_time(LK, l ^ 1))


@core_inline
def _reschedule_links(P: Plan, K: Kernel, LK: Links, now: float) -> None:
    """With several PS, NIC sharing may have re-weighted flows on any link: re-time them all."""
    for m in range(len(P.link_res)):
        advance(LK, m, now)
        schedule(K, P.W * P.R + m, next_time(LK, m))


@core_inline
def _step_done(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, w: int, now: float) -> None:
    c = S.ctr[C_COMPLETIONS]
    S.comp_t[c] = now
    S.comp_w[c] = w
    S.ctr[C_COMPLETIONS] = c + 1
    S.w_steps[w] += 1
    first, last = w, w + 1
    if P.sync:
        S.ctr[C_SYNC] += 1
        if S.ctr[C_SYNC] < P.W:
            return
        S.ctr[C_SYNC] = 0  # barrier: everyone starts the next step together
        first, last = 0, P.W
    for v in range(first, last):  # one call site: every call is a copy of the inlined code
        _start_step(P, S, K, LK, Q, v, now)


@core_inline
def _start_step(P: Plan, S: State, K: Kernel, LK: Links, Q: Heaps, w: int, now: float) -> None:
    """Sample a profiled step (with replacement) for worker w and release its root ops."""
    cap = len(S.samp) // P.W
    k = S.samp_cur[w]
    S.samp_cur[w] = k + 1
    if k + 2 >= cap:  # the driver refills samples before the next event
        S.ctr[C_REFILL] = 1
    code = S.samp[w * cap + k]
    rows = P.worker_rows[w]
    S.w_row[w] = P.worker_row0[w] + code % rows
    S.w_perm[w] = code // rows
    base = w * P.n_ops
    for op in range(P.n_ops):
        S.waiting[base + op] = P.op_npred[op]
        S.op_rem[base + op] = P.op_size[op]
        S.op_served[base + op] = 0
    S.w_left[w] = P.n_ops
    for j in range(len(P.roots)):
        _enqueue(P, S, K, Q, w, P.roots[j])
    for r in range(P.R):
        _try_start(P, S, K, LK, Q, w, r, now)
