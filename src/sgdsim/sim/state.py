"""Mutable simulator state: flat arrays allocated once per simulated configuration."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..compiled import F64, HAVE_COMPILED, I64
from .flows import Links
from .heap import Heaps
from .kernel import Kernel


class State(NamedTuple):
    samp: I64
    samp_cur: I64
    waiting: I64
    op_rem: F64
    op_served: I64
    w_left: I64
    w_row: I64
    w_perm: I64
    w_steps: I64
    run_op: I64
    run_start: F64
    run_bytes: F64
    busy: F64
    ctr: I64
    win: F64
    bytes0: F64
    sent: F64
    comp_t: F64
    comp_w: I64
    tl_on: I64
    tl_w: I64
    tl_r: I64
    tl_op: I64
    tl_t0: F64
    tl_t1: F64
    tl_step: I64
    contention: F64
    c_work: F64
    c_since: F64
    c_speed: F64
    moving: I64
    transferring: I64


SAMPLES_PER_WORKER = 256


def make_state(plan, n_links: int, comp_capacity: int, timeline_capacity: int,
               contention=(0.0, 0.0, 0.0)) -> State:
    """``contention``: compute slower per other worker pulling, pushing (``topology/hosts.py``),
    and the cores the workers' compute shares (0: not shared; ``topology.shared_cores``);
    ``c_work``/``c_since``/``c_speed``: each running compute op's work left (s alone), when that
    was counted, and its speed since (``contention.restretch``); ``moving``: each worker's flows
    on downlinks and on uplinks, ``transferring``: how many workers have any (pulling,
    pushing), and how many compute (``contention.computing``), kept only while contention is on."""
    W, n, R = plan.W, plan.n_ops, plan.R
    i64, f64 = np.int64, np.float64
    tl = max(2, timeline_capacity)
    return State(
        samp=np.zeros(W * SAMPLES_PER_WORKER, i64), samp_cur=np.full(W, SAMPLES_PER_WORKER, i64),
        waiting=np.zeros(W * n, i64), op_rem=np.zeros(W * n, f64), op_served=np.zeros(W * n, i64),
        w_left=np.zeros(W, i64), w_row=np.zeros(W, i64), w_perm=np.zeros(W, i64),
        w_steps=np.zeros(W, i64),
        run_op=np.full(W * R, -1, i64), run_start=np.zeros(W * R, f64),
        run_bytes=np.zeros(W * R, f64), busy=np.zeros(W * R, f64),
        ctr=np.zeros(8, i64), win=np.zeros(1, f64),
        bytes0=np.zeros(n_links, f64), sent=np.zeros(n_links, f64),
        comp_t=np.zeros(comp_capacity, f64), comp_w=np.zeros(comp_capacity, i64),
        tl_on=np.array([1 if timeline_capacity > 0 else 0], i64),
        tl_w=np.zeros(tl, i64), tl_r=np.zeros(tl, i64), tl_op=np.zeros(tl, i64),
        tl_t0=np.zeros(tl, f64), tl_t1=np.zeros(tl, f64), tl_step=np.zeros(tl, i64),
        contention=np.asarray(tuple(contention) + (0.0,) * (3 - len(contention)), f64),
        c_work=np.zeros(W * R, f64),
        c_since=np.zeros(W * R, f64), c_speed=np.ones(W * R, f64),
        moving=np.zeros(2 * W, i64), transferring=np.zeros(3, i64),
    )


def for_backend(x):
    """Plain Python runs the same code much faster on lists than on numpy scalars."""
    if HAVE_COMPILED:
        return x
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (State, Links, Heaps, Kernel)) or _is_plan(x):
        return type(x)(*[for_backend(v) for v in x])
    return x


def _is_plan(x) -> bool:
    return type(x).__name__ == "Plan"


def arr(x, dtype=None) -> np.ndarray:
    return np.asarray(x, dtype=dtype)
