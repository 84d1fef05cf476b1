"""Mean value analysis (sgdsim.analytic.mva): textbook oracles, TPDS Eqs. 1-2 by hand, the
symmetric reduction, and invariants on random networks (hypothesis).

Oracles: the classic single-class example with think time (demands 2, 3, 1 s, Z = 4 s,
N = 20: queue lengths 1.991, 16.177, 0.500), a two-class two-station network solved by hand
below, and the classic Bard-Schweitzer example (demands 0.605, 2.1, 1.35 s, Z = 15 s, N = 3:
throughput 0.1510 approximate, 0.1515 exact).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgdsim.analytic.mva import (EXACT_LIMIT, KINDS, MAX_EXACT_STATES, mva_exact, mva_schweitzer,
                                 mva_symmetric, solve, symmetric_curve)

# SGDSIM_PROPERTY_EXAMPLES=5000 explores more (randomly); the default run is fixed.
_N = int(os.environ.get("SGDSIM_PROPERTY_EXAMPLES", "150"))
SETTINGS = settings(max_examples=_N, deadline=None, derandomize=_N <= 150,
                    suppress_health_check=[HealthCheck.too_slow])
ASYNC = ["delay", "fcfs", "ps", "fcfs"]  # TPDS Fig. 5: compute, uplink, PS update, downlink


def async_row(link: str = "fcfs", compute=0.7, comm=0.2, update=0.05):
    return np.array([compute, comm, update, comm]), ["delay", link, "ps", link]


# ----------------------------------------------------------------------------- textbook oracles

def test_single_class_textbook_queue_lengths_and_symmetric_reduction():
    S, kinds = [[4.0, 2.0, 3.0, 1.0]], ["delay", "ps", "ps", "ps"]
    ex = mva_exact(S, kinds, populations=[20])
    np.testing.assert_allclose(ex.N[0, 1:], [1.991, 16.177, 0.500], atol=1e-3)
    assert ex.N.sum() == pytest.approx(20.0, rel=1e-12)
    # 20 identical workers of population 1 are the single class of population 20
    sym = mva_symmetric(S[0], kinds, 20)
    np.testing.assert_allclose(sym.N.sum(axis=0), ex.N[0], rtol=1e-12)
    np.testing.assert_allclose(sym.T, np.repeat(ex.T, 20, axis=0), rtol=1e-12)
    assert sym.throughput == pytest.approx(ex.throughput, rel=1e-12)


def test_two_classes_two_ps_stations_by_hand():
    # alone: class 1 has N = (1/4, 3/4), class 2 has N = (1/3, 2/3); Eq. 1 with the other
    # alone gives T_1 = (1·4/3, 3·5/3), T_2 = (2·5/4, 4·7/4)
    r = mva_exact([[1.0, 3.0], [2.0, 4.0]], ["ps", "ps"])
    np.testing.assert_allclose(r.X, [3 / 19, 2 / 19], rtol=1e-12)
    np.testing.assert_allclose(r.T, [[4 / 3, 5.0], [2.5, 7.0]], rtol=1e-12)
    assert r.method == "exact"


def test_schweitzer_textbook_example_and_exact():
    S, kinds = [[15.0, 0.605, 2.1, 1.35]], ["delay", "ps", "ps", "ps"]
    sw, ex = mva_schweitzer(S, kinds, populations=[3]), mva_exact(S, kinds, populations=[3])
    assert sw.X[0] == pytest.approx(0.1510, abs=5e-4)
    assert ex.X[0] == pytest.approx(0.1515, abs=5e-4)
    assert ex.X[0] - sw.X[0] > 2e-4  # an approximation, not the recursion in disguise
    assert sw.method == "schweitzer" and sw.iterations > 1


def test_schweitzer_is_exact_for_one_worker():
    # population 1: N_k(n - e_k) = 0 is estimated as (1 - 1)/1 N_k(n) = 0, no error left
    S, kinds = [async_row()[0]], ASYNC
    np.testing.assert_allclose(mva_schweitzer(S, kinds).X, mva_exact(S, kinds).X, rtol=1e-9)


# ----------------------------------------------------------------------------- TPDS Eq. 2 (FCFS)

def test_fcfs_one_worker_alone_has_no_queueing():
    S = np.array([[2.0, 0.5, 0.1, 0.5]])
    r = mva_exact(S, ASYNC)
    np.testing.assert_allclose(r.T, S, rtol=1e-15)
    assert r.X[0] == pytest.approx(1 / 3.1, rel=1e-15)
    # a second worker that never runs (population 0) changes nothing
    r2 = mva_exact(np.vstack([S, S]), ASYNC, populations=[1, 0])
    np.testing.assert_allclose(r2.T[0], S[0], rtol=1e-15)
    assert r2.X[1] == 0 and not r2.T[1].any()


def test_fcfs_two_deterministic_workers_by_hand():
    # Z = 3 (delay), S = 1 (fcfs). One worker alone: X = 1/4, N = rho = 1/4 at the link.
    # Eq. 2 with the other alone: T = 1 + 1·(1/4 - 1/8) = 9/8, so X_k = 1/(3 + 9/8) = 8/33.
    S, kinds = [[3.0, 1.0], [3.0, 1.0]], ["delay", "fcfs"]
    for r in (mva_exact(S, kinds), mva_symmetric(S[0], kinds, 2)):
        np.testing.assert_allclose(r.T[:, 1], 9 / 8, rtol=1e-14)
        np.testing.assert_allclose(r.X, 8 / 33, rtol=1e-14)
    # PS (Eq. 1) instead: T = 1·(1 + 1/4) = 5/4, X_k = 4/17
    np.testing.assert_allclose(mva_exact(S, ["delay", "ps"]).X, 4 / 17, rtol=1e-14)


def test_fcfs_eq2_can_exceed_unit_utilization():
    # Documented property of TPDS Eq. 2, not a solver bug: two workers, one FCFS station, no
    # think time. Eq. 2 with the other alone (N = rho = 1): T = 1 + (1 - 1/2) = 3/2, so the
    # station "serves" 2/(3/2) = 4/3 > 1. PS (Eq. 1) gives exactly 1. See docs/mva.md.
    r = mva_exact([[1.0], [1.0]], ["fcfs"])
    assert r.U.sum() == pytest.approx(4 / 3, rel=1e-14)
    assert mva_exact([[1.0], [1.0]], ["ps"]).U.sum() == pytest.approx(1.0, rel=1e-14)


def test_fcfs_station_not_visited_costs_nothing():
    r = mva_exact([[1.0, 0.0], [1.0, 2.0]], ["delay", "fcfs"])
    assert r.T[0, 1] == 0.0 and r.X[0] == pytest.approx(1.0, rel=1e-15)
    assert r.T[1, 1] == pytest.approx(2.0, rel=1e-15)  # worker 0 never occupies the link


def test_shared_delay_column_equals_dedicated_compute_stations():
    # TPDS Fig. 5 gives each worker its own compute station; one delay column with per-worker
    # values is the same network, since a delay station never queues.
    compute = np.array([0.3, 0.9, 1.7])
    links = np.tile([0.2, 0.05, 0.2], (3, 1))
    shared = mva_exact(np.column_stack([compute, links]), ASYNC)
    dedicated = mva_exact(np.column_stack([np.diag(compute), links]), ["delay"] * 3 + ASYNC[1:])
    np.testing.assert_allclose(shared.X, dedicated.X, rtol=1e-13)
    np.testing.assert_allclose(shared.T[:, 1:], dedicated.T[:, 3:], rtol=1e-13)


# ----------------------------------------------------------------------------- symmetric reduction

@pytest.mark.parametrize("link", ["ps", "fcfs"])
@pytest.mark.parametrize("K", range(1, 11))
def test_exact_multiclass_equals_symmetric(K, link):
    row, kinds = async_row(link)
    ex, sym = mva_exact(np.tile(row, (K, 1)), kinds), mva_symmetric(row, kinds, K)
    for name in ("X", "T", "N", "U"):
        np.testing.assert_allclose(getattr(sym, name), getattr(ex, name), rtol=1e-10, err_msg=name)
    assert sym.X.shape == (K,) and sym.T.shape == (K, 4) and sym.method == "symmetric"
    # ... and the single class of population K (the reduction in mva_symmetric's docstring)
    one = mva_exact(row[None], kinds, populations=[K])
    assert one.throughput == pytest.approx(sym.throughput, rel=1e-10)


def test_identical_customers_split_into_classes_of_any_population():
    row, kinds = async_row("ps")
    ex = mva_exact(np.tile(row, (3, 1)), kinds, populations=[2, 1, 1])
    sym = mva_symmetric(row, kinds, 4)
    np.testing.assert_allclose(ex.X / [2, 1, 1], sym.X[0], rtol=1e-12)
    np.testing.assert_allclose(ex.T, sym.T[:3], rtol=1e-12)


def test_symmetric_curve_matches_each_solution():
    row, kinds = async_row("fcfs")
    curve = symmetric_curve(row, kinds, 40)
    expected = [mva_symmetric(row, kinds, K).throughput for K in range(1, 41)]
    np.testing.assert_allclose(curve, expected, rtol=1e-14)


def test_symmetric_1024_workers_reach_the_bottleneck_bound():
    row = np.array([0.7, 0.02, 0.005, 0.01])  # one bottleneck: the uplink, 0.02 s
    r = mva_symmetric(row, ["delay", "ps", "ps", "ps"], 1024)
    assert r.throughput <= 1 / 0.02
    assert r.throughput == pytest.approx(1 / 0.02, rel=1e-6)
    assert np.all(np.isfinite(r.N)) and r.N.sum() == pytest.approx(1024, rel=1e-12)
    # Eq. 2 overshoots the bound by ~1/(2K) at a single FCFS bottleneck (docs/mva.md)
    over = mva_symmetric(row, ASYNC, 1024).throughput * 0.02 - 1
    assert 0 < over < 1 / 1024


# ----------------------------------------------------------------------------- Schweitzer error

def test_schweitzer_misses_a_fast_worker_by_hand():
    # Worker 0 is fast (0.01 s at station 0 only); worker 1 visits both stations for 1 s.
    # Exact: worker 0 meets worker 1 *alone* (N = 1/2 at station 0): T = 0.015, X = 200/3.
    # Schweitzer: it meets worker 1 as seen at the full population (N = 2/3): X = 60.
    S, kinds = [[0.01, 0.0], [1.0, 1.0]], ["ps", "ps"]
    ex, sw = mva_exact(S, kinds), mva_schweitzer(S, kinds)
    np.testing.assert_allclose(ex.X, [200 / 3, 1 / 3], rtol=1e-12)
    np.testing.assert_allclose(sw.X, [60.0, 1 / 3], rtol=1e-9)


def _async_network(rng, K, link):
    comm = 10 ** rng.uniform(-2, 0)
    S = np.column_stack([rng.uniform(0.5, 1.5, K), np.full(K, comm),
                         np.full(K, rng.uniform(0.02, 0.2) * comm), np.full(K, comm)])
    return S, ["delay", link, "ps", link]


def test_schweitzer_typical_error_on_async_sgd_networks():
    rng = np.random.default_rng(1)
    errors = []
    for _ in range(60):
        K, link = int(rng.integers(2, 11)), ("fcfs", "ps")[int(rng.integers(2))]
        S, kinds = _async_network(rng, K, link)
        errors.append(abs(mva_schweitzer(S, kinds).throughput / mva_exact(S, kinds).throughput - 1))
    # benchmarks/bench_mva.py measures mean 1.7 %, max 6.9 % over 400 such networks
    assert np.mean(errors) < 0.03 and max(errors) < 0.10
    assert np.mean(errors) > 1e-4  # it is an approximation


# ----------------------------------------------------------------------------- dispatcher, errors

def test_solve_dispatch():
    row, kinds = async_row()
    assert solve(np.tile(row, (64, 1)), kinds).method == "symmetric"
    S = np.tile(row, (5, 1))
    S[:, 0] = [0.5, 0.6, 0.7, 0.8, 0.9]
    assert solve(S, kinds).method == "exact"
    far = solve(S, kinds, exact_limit=4)
    assert far.method == "schweitzer"
    assert far.throughput == pytest.approx(solve(S, kinds).throughput, rel=0.05)
    assert EXACT_LIMIT == 19 and 2 ** EXACT_LIMIT <= MAX_EXACT_STATES


@pytest.mark.parametrize("call, match", [
    (lambda: mva_exact([[1.0, 2.0]], ["ps"]), "one kind per station"),
    (lambda: mva_exact([[1.0]], ["lifo"]), "unknown station kind"),
    (lambda: mva_exact([[1.0]], "ps"), "one kind per station"),
    (lambda: mva_exact([[-1.0]], ["ps"]), "finite and >= 0"),
    (lambda: mva_exact([[np.nan]], ["ps"]), "finite and >= 0"),
    (lambda: mva_exact([1.0], ["ps"]), "2-D"),
    (lambda: mva_exact([[1.0], [0.0]], ["ps"]), "zero total service"),
    (lambda: mva_exact([[1.0]], ["ps"], populations=[1.5]), "non-negative integers"),
    (lambda: mva_exact([[1.0]], ["ps"], populations=[1, 1]), "non-negative integers"),
    (lambda: mva_exact(np.ones((22, 1)), ["ps"]), "MAX_EXACT_STATES"),
    (lambda: mva_symmetric([1.0], ["ps"], 0), "positive integer"),
    (lambda: mva_symmetric([0.0], ["ps"], 3), "zero total service"),
    (lambda: mva_schweitzer([[1.0], [0.0]], ["ps"]), "zero total service"),
])
def test_invalid_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_schweitzer_reports_non_convergence():
    with pytest.raises(RuntimeError, match="did not converge"):
        mva_schweitzer([[1.0, 0.5], [2.0, 0.5]], ["delay", "ps"], max_iter=1)


def test_empty_population_and_zero_population_class():
    r = mva_exact([[1.0, 2.0]], ["delay", "ps"], populations=[0])
    assert r.throughput == 0 and not r.N.any()
    sw = mva_schweitzer([[1.0, 2.0], [1.0, 2.0]], ["delay", "ps"], populations=[0, 2])
    assert sw.X[0] == 0 and not sw.T[0].any() and sw.N[1].sum() == pytest.approx(2, rel=1e-9)


# ----------------------------------------------------------------------------- properties

@st.composite
def networks(draw, kinds=KINDS, max_K=5, max_L=4, max_pop=1):
    K, L = draw(st.integers(1, max_K)), draw(st.integers(1, max_L))
    kind_list = draw(st.lists(st.sampled_from(kinds), min_size=L, max_size=L))
    value = st.one_of(st.just(0.0), st.floats(1e-3, 1e2))
    S = np.array(draw(st.lists(value, min_size=K * L, max_size=K * L))).reshape(K, L)
    S[S.sum(axis=1) == 0, 0] = 1.0
    pops = np.array(draw(st.lists(st.integers(0, max_pop), min_size=K, max_size=K)))
    if max_pop == 1:
        pops[:] = 1
    return S, kind_list, pops


def _check_common(r, S, pops):
    n = np.asarray(pops, dtype=float)
    np.testing.assert_allclose(r.N, r.X[:, None] * r.T, rtol=1e-12)  # Little, per station
    np.testing.assert_allclose(r.N.sum(axis=1), n, rtol=1e-9, atol=1e-12)  # Little, per cycle
    np.testing.assert_allclose(r.U, r.X[:, None] * S, rtol=1e-12)
    # nobody beats running alone (T >= S under both Eq. 1 and Eq. 2); absent classes: T = 0
    assert np.all(r.T[n > 0] >= S[n > 0] * (1 - 1e-12)) and not r.T[n == 0].any()
    alone = np.divide(n, S.sum(axis=1))
    assert np.all(r.X <= alone * (1 + 1e-12))


@SETTINGS
@given(networks(max_pop=3))
def test_exact_invariants(net):
    S, kinds, pops = net
    _check_common(mva_exact(S, kinds, pops), S, pops)


@SETTINGS
@given(networks(max_K=8))
def test_schweitzer_invariants(net):
    S, kinds, pops = net
    _check_common(mva_schweitzer(S, kinds), S, pops)


@SETTINGS
@given(networks(kinds=("delay", "ps"), max_K=6, max_pop=2))
def test_ps_utilization_at_most_one(net):
    # Eqs. 1 only (with delay stations): product form, so utilization is a true probability.
    # (Eq. 2 stations break this, see test_fcfs_eq2_can_exceed_unit_utilization.)
    S, kinds, pops = net
    ps = np.array([k == "ps" for k in kinds])
    for r in (mva_exact(S, kinds, pops), mva_schweitzer(S, kinds, pops),
              mva_symmetric(S[0], kinds, len(S))):
        assert np.all(r.U[:, ps].sum(axis=0) <= 1 + 1e-9), r.method


@SETTINGS
@given(K=st.integers(2, 8), link=st.sampled_from(["ps", "fcfs"]),
       comm=st.floats(1e-3, 1e3), update=st.floats(1e-3, 1.0),
       compute=st.lists(st.floats(0.1, 10.0), min_size=8, max_size=8))
def test_schweitzer_within_10_percent_on_async_sgd_networks(K, link, comm, update, compute):
    S = np.column_stack([compute[:K], np.full(K, comm), np.full(K, update * comm), np.full(K, comm)])
    kinds = ["delay", link, "ps", link]
    ex, sw = mva_exact(S, kinds), mva_schweitzer(S, kinds)
    assert abs(sw.throughput / ex.throughput - 1) <= 0.10


@SETTINGS
@given(networks(max_K=6))
def test_solve_agrees_with_exact_when_exact_is_used(net):
    S, kinds, _ = net
    r = solve(S, kinds)
    ex = mva_exact(S, kinds)
    np.testing.assert_allclose(r.X, ex.X, rtol=1e-9)
    assert r.method in ("exact", "symmetric")

