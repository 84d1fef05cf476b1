"""Chains on one exclusive resource run as one op (``sim/contract.py``).

Oracles: the folding rule checked against a brute-force reachability search on hand-made and
random DAGs, and simulations with and without folding (a timeline turns it off) that must give
the same completion times on random layered profiles, every mode, sharing and worker count.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgdsim.sim import WorkerClass
from sgdsim.sim.contract import chains
from sgdsim.sim.plan import build_plan
from sgdsim.sim.simulate import _Sim

from conftest import EXAMPLES, approx, build_profile, compute, layered_profile
from simcfg import simcfg
from sgdsim.profile.io import load_profile


def _graph(n: int, edges: list[tuple[int, int]]):
    succ = [[] for _ in range(n)]
    npred = np.zeros(n, np.int64)
    for a, b in edges:
        succ[a].append(b)
        npred[b] += 1
    return npred, succ


def _reach(succ, a: int, b: int) -> bool:
    todo, seen = [a], set()
    while todo:
        i = todo.pop()
        if i == b:
            return True
        if i not in seen:
            seen.add(i)
            todo += succ[i]
    return False


def _foldable(npred, succ, res, exclusive, b: int) -> bool:
    """The rule, spelled out with explicit searches."""
    preds = [a for a in range(len(succ)) if b in succ[a]]
    if len(preds) != 1 or not exclusive[res[b]]:
        return False
    a = preds[0]
    return (succ[a] == [b] and res[a] == res[b]
            and all(_reach(succ, o, b) or _reach(succ, b, o)
                    for o in range(len(succ)) if o != b and res[o] == res[b]))


def test_a_chain_folds_but_parallel_branches_on_one_resource_do_not():
    # 0 -> 1 -> 2 -> {3, 4} -> 5 -> 6, all on resource 0; 4 -> 7 on a link (resource 1)
    npred, succ = _graph(8, [(0, 1), (1, 2), (2, 3), (2, 4), (3, 5), (4, 5), (5, 6), (4, 7)])
    res = np.array([0, 0, 0, 0, 0, 0, 0, 1])
    groups = chains(npred, succ, res, np.array([True, False]))
    assert groups == [[0, 1, 2], [3], [4], [5, 6], [7]]


def test_an_op_with_a_concurrent_op_on_its_resource_keeps_its_own_event():
    # 0 -> 1 on resource 0, while 2 (also resource 0) is unrelated: 2 may be queued when 0
    # ends and win the resource, so 1 must stay separate
    npred, succ = _graph(3, [(0, 1)])
    assert chains(npred, succ, np.array([0, 0, 0]), np.array([True])) == [[0], [1], [2]]
    # on different resources the pair folds
    assert chains(npred, succ, np.array([0, 0, 1]), np.array([True, True])) == [[0, 1], [2]]


def test_links_never_fold():
    npred, succ = _graph(3, [(0, 1), (1, 2)])
    assert chains(npred, succ, np.array([0, 0, 0]), np.array([False])) == [[0], [1], [2]]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_folds_are_exactly_the_brute_force_rule(data):
    n = data.draw(st.integers(2, 12))
    edges = [(a, b) for a in range(n) for b in range(a + 1, n)
             if data.draw(st.floats(0, 1)) < 0.25]
    res = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    exclusive = np.array([True, True, False])
    npred, succ = _graph(n, edges)
    groups = chains(npred, succ, res, exclusive)
    assert sorted(i for g in groups for i in g) == list(range(n))
    tails = {i for g in groups for i in g[1:]}
    assert tails == {b for b in range(n) if _foldable(npred, succ, res, exclusive, b)}
    for g in groups:
        assert all(succ[a] == [b] for a, b in zip(g, g[1:]))


def _completions(prof, W, **cfg):
    base = dict(bandwidth_bps=8e6, seed=3, warmup_steps=2, steps_per_worker=6, **cfg)
    out = []
    for timeline in (False, True):
        sim = _Sim([WorkerClass("w", prof, W)], simcfg(**base, timeline=timeline))
        assert sim.run_until(8 * W, 10**7)
        out.append((sim.plan.n_ops, np.asarray(sim.S.comp_t[:8 * W]).copy()))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_folding_leaves_every_completion_time_unchanged(data):
    n = data.draw(st.integers(2, 6))
    steps = data.draw(st.integers(1, 3))
    sizes = data.draw(st.lists(st.sampled_from([0.0, 1e5, 4e5]), min_size=n, max_size=n))
    dur = st.lists(st.lists(st.floats(0.001, 0.05), min_size=n, max_size=n),
                   min_size=steps, max_size=steps)
    prof = layered_profile(sizes, data.draw(dur), data.draw(dur), upd=data.draw(dur),
                           overlap=data.draw(st.booleans()))
    W = data.draw(st.integers(1, 3))
    mode, sharing = data.draw(st.sampled_from([("async", "ps"), ("async", "fcfs"), ("sync", "ps")]))
    (n_fast, fast), (n_slow, slow) = _completions(prof, W, mode=mode, sharing=sharing)
    assert n_fast <= n_slow == prof.n_ops
    assert fast == approx(slow, 1e-9)


def test_a_pass_without_parameters_becomes_one_op_and_keeps_its_time():
    ops = [compute("a"), compute("b", ["a"]), compute("c", ["b"]), compute("d", ["c"], resource="ps")]
    prof = build_profile(ops, [{"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.05},
                               {"a": 0.2, "b": 0.2, "c": 0.2, "d": 0.05}])
    plan, info, *_ = build_plan([WorkerClass("w", prof, 1)], simcfg(bandwidth_bps=1e9))
    assert plan.n_ops == 2 and list(info.op_index) == [0, 3]
    assert plan.dur.reshape(2, 2)[:, 0] == approx([0.6, 0.6])


@pytest.mark.parametrize("name,folded", [("resnet50.json", 0.10), ("resnet50-nooverlap.json", 0.25)])
def test_pipedream_profiles_lose_their_parameterless_layers(name, folded):
    prof = load_profile(EXAMPLES / name)
    plan, *_ = build_plan([WorkerClass("w", prof, 2)], simcfg(bandwidth_bps=1e9))
    assert plan.n_ops < (1 - folded) * prof.n_ops
