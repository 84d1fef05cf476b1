"""Two-way traffic: a NIC direction slowed by surplus flows the other way.

Oracles: a hand-computed link timeline (rates change when the other direction's flows come
and go), the fit of k on exact synthetic cases, the multinomial factors by brute-force
enumeration, the coarse model's fixed point against its own closed form at k = 0 and in
the limits, and invariance where the mechanism cannot act (one worker, sync all-reduce).
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import chunks, layered_profile, run_sim
from sgdsim import predict
from sgdsim.analytic.async_ps import async_ps_sweep, eq5_sweep
from sgdsim.analytic.coarse_profile import CoarseProfile
from sgdsim.analytic.two_way import TwoWay, check_table, direction_factors
from sgdsim.errors import ConfigError
from sgdsim.hardware import hardware_from_dict
from sgdsim.lab.twoway import cases_for, fit_penalty
from sgdsim.sim.flows import make_links
from sgdsim.sim.links import add_flow, advance, next_flow, next_time, remove_flow

MB = 1e6


def _links(k, W=4, bw=1.0):
    return make_links(2, W, 0, np.full(2, bw), np.full(2, np.inf), None,
                      TwoWay(k).grid(W + 1) if k > 0 else None)


def test_a_direction_slows_while_more_flows_run_the_other_way_and_recovers():
    # link 0 (downlink) and 1 (uplink) are one NIC; B = 1 byte/s, k = 0.2
    LK = _links(0.2)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)            # 1 byte down
    for w in (1, 2, 3):
        add_flow(LK, 1, w, 10.0, 0.0, w)       # three long flows up: surplus 2 -> factor 0.6
    assert next_time(LK, 0) == pytest.approx(1 / 0.6)
    assert next_time(LK, 1) == pytest.approx(30.0)  # the majority keeps its whole link
    advance(LK, 1, 0.5)
    remove_flow(LK, 1, 3, 0.5, 4)
    remove_flow(LK, 1, 2, 0.5, 5)              # surplus 0: full rate for the 0.7 byte left
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(0.5 + 0.7)
    # the uplink moved 1/6 byte per flow in 0.5 s; worker 1, alone now, sends the rest at B
    assert next_time(LK, 1) == pytest.approx(0.5 + (10 - 0.5 / 3))


def test_the_factor_never_falls_below_the_floor():
    LK = _links(0.5, W=8)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    for w in range(1, 8):
        add_flow(LK, 1, w, 1.0, 0.0, w)        # surplus 6: 1 - 3 < 0.05
    assert next_time(LK, 0) == pytest.approx(1 / 0.05)


def test_without_a_penalty_the_directions_are_independent():
    LK = _links(0.0)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    for w in (1, 2, 3):
        add_flow(LK, 1, w, 1.0, 0.0, w)
    assert next_time(LK, 0) == pytest.approx(1.0)


def test_fit_recovers_an_exact_penalty_and_ignores_floored_cases():
    cases = [{"n": n, "m": m, "factor": max(0.05, 1 - 0.17 * (m - n))}
             for n, m in [(1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (1, 6), (1, 8)]]
    assert fit_penalty(cases) == pytest.approx(0.17)


def test_fit_without_any_asymmetric_case_is_an_error():
    from sgdsim.errors import SgdsimError
    with pytest.raises(SgdsimError):
        fit_penalty([{"n": 2, "m": 2, "factor": 0.97}])


def test_cases_fit_the_lab_and_come_in_both_directions():
    cases = cases_for(4)
    assert all(a + b <= 4 for a, b in cases)
    assert {(b, a) for a, b in cases} == set(cases)
    assert (1, 3) in cases and (1, 4) not in cases


@settings(max_examples=25, deadline=None)
# no subnormal utilizations: the oracle's powers of a 5e-324 probability underflow to noise
@given(st.integers(2, 7), st.floats(0.0, 1.0, allow_subnormal=False),
       st.floats(0.0, 1.0, allow_subnormal=False), st.floats(0.01, 0.5))
def test_multinomial_factors_match_brute_force_enumeration(K, a, b, k):
    q_up, q_down = a * K / 2, b * K / 2
    pu, pd = q_up / K, q_down / K
    num_u = num_d = den_u = den_d = 0.0
    for nu, nd in itertools.product(range(K + 1), repeat=2):
        if nu + nd > K:
            continue
        p = (math.factorial(K) / (math.factorial(nu) * math.factorial(nd) * math.factorial(K - nu - nd))
             * pu ** nu * pd ** nd * (1 - pu - pd) ** (K - nu - nd))
        num_u += p * nu * max(0.05, 1 - k * max(0, nd - nu))
        num_d += p * nd * max(0.05, 1 - k * max(0, nu - nd))
        den_u, den_d = den_u + p * nu, den_d + p * nd
    fu, fd = direction_factors(q_up, q_down, K, TwoWay(k).grid(K + 1))
    assert fu == pytest.approx(num_u / den_u if den_u else 1.0, rel=1e-9, abs=1e-12)
    assert fd == pytest.approx(num_d / den_d if den_d else 1.0, rel=1e-9, abs=1e-12)


def _full_grid_factors(q_up, q_down, K, grid):
    """direction_factors over every (n_up, n_down) split of K workers: the definition."""
    from sgdsim.analytic.two_way import _build_occupancies, _weighted, _xlogy
    p_up, p_down = min(q_up / K, 1.0), min(q_down / K, 1.0)
    if p_up + p_down > 1.0:
        p_up, p_down = p_up / (p_up + p_down), p_down / (p_up + p_down)
    nu, nd, rest, ok, log_coef = _build_occupancies(K)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = log_coef + _xlogy(nu, p_up) + _xlogy(nd, p_down) + _xlogy(rest, 1 - p_up - p_down)
    pmf = np.where(ok, np.exp(logp), 0.0)
    return _weighted(pmf, nu, grid[1][nu, nd]), _weighted(pmf, nd, grid[0][nd, nu])


LAB_TABLE = check_table(hardware_from_dict({
    "format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
    "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0,
    "two_way_table": [[[None, None, None], [1.0, 0.99, 0.6], [1.0, 0.95, None]],
                      [[None, None, None], [1.0, 0.97, 0.55], [1.0, 0.9, None]]]}).two_way_table)


@settings(max_examples=30, deadline=None)
@given(st.integers(129, 600), st.floats(0.0, 1.0, allow_subnormal=False),
       st.floats(0.0, 1.0, allow_subnormal=False), st.booleans())
def test_above_the_cached_counts_only_the_likely_splits_are_summed_to_the_same_factors(K, a, b, table):
    """Above 128 workers only the splits whose binomial marginals are above e^-80 are summed
    (O(K) cells of (K + 1)^2): the factors equal the full grid's to rounding, for the linear
    rule and a measured table, at the corners (nobody, or everybody, one way) as inside."""
    rule = TwoWay(table=LAB_TABLE) if table else TwoWay(0.15)
    grid = rule.grid(K + 1)
    q_up, q_down = a * K, b * K
    got, want = direction_factors(q_up, q_down, K, grid), _full_grid_factors(q_up, q_down, K, grid)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


COARSE = CoarseProfile(model_bytes=10e6, forward_s=0.01, backward_s=0.02, update_s=0.0, batch_size=16)


def test_coarse_penalty_zero_is_the_papers_model_and_one_worker_is_untouched():
    Ks = [1, 2, 4, 8]
    plain = [r.throughput for r in async_ps_sweep(COARSE, 100e6 / 8, Ks, "ps")]
    zero = [r.throughput for r in async_ps_sweep(COARSE, 100e6 / 8, Ks, "ps", two_way=TwoWay(0.0))]
    slowed = [r.throughput for r in async_ps_sweep(COARSE, 100e6 / 8, Ks, "ps", two_way=TwoWay(0.17))]
    assert zero == plain
    # one worker never sends both ways at once; two are never 1 against 2 or more
    assert slowed[:2] == pytest.approx(plain[:2])
    assert all(s < p for s, p in zip(slowed[2:], plain[2:]))
    # the link bound B/M·batch (both directions full) is never exceeded
    assert max(slowed) <= 100e6 / 8 / 10e6 * 16 * (1 + 1e-9)


def test_coarse_heterogeneous_path_agrees_with_the_symmetric_sweep():
    """Identical workers given as two classes go through the exact multi-class MVA; the
    fixed point must land where the symmetric recursion's does."""
    from sgdsim.analytic.async_ps import async_ps

    for k in (0.0, 0.17):
        sym = async_ps_sweep(COARSE, 100e6 / 8, [5], "ps", two_way=TwoWay(k))[0].throughput
        het = async_ps([(COARSE, 2), (COARSE, 3)], 100e6 / 8, "ps", two_way=TwoWay(k)).throughput
        assert het == pytest.approx(sym, rel=1e-5)


def test_coarse_threshold_branch_fcfs_is_not_slowed():
    # under FCFS one flow per direction is served: no surplus, as in the simulator
    a = async_ps_sweep(COARSE, 100e6 / 8, [4], "fcfs")[0].throughput
    b = async_ps_sweep(COARSE, 100e6 / 8, [4], "fcfs", two_way=TwoWay(0.3))[0].throughput
    assert a == b


def _fluid_bytes(chunks_on, chunks_rev, B, k):
    """Bytes each transfer on a link gets when replayed as fluid: B·f(n, m)/n at every instant."""
    times = sorted({t for c in chunks_on + chunks_rev for t in (c.start, c.end)})
    got = [0.0] * len(chunks_on)
    surplus_seen = False
    for a, b in zip(times, times[1:]):
        mid = (a + b) / 2
        on = [i for i, c in enumerate(chunks_on) if c.start < mid < c.end]
        m = sum(1 for c in chunks_rev if c.start < mid < c.end)
        if not on:
            continue
        surplus_seen |= m > len(on)
        rate = B * max(0.05, 1 - k * max(0, m - len(on))) / len(on)
        for i in on:
            got[i] += rate * (b - a)
    return got, surplus_seen


@pytest.mark.parametrize("W,seed", [(3, 0), (4, 1), (5, 2)])
def test_fine_transfers_get_exactly_their_bytes_under_the_two_way_rule(W, seed):
    """Replay the simulated timeline as a fluid with the rule of sim/sharing/fair.py: every
    transfer must receive exactly its size, so both directions were re-timed at every change."""
    S, k = 2 * MB, 0.2
    p = layered_profile([S], [0.05], [0.05], overlap=False)
    r = run_sim(p, workers=W, Bps=MB, steps=6, mode="async", sharing="ps", seed=seed,
                two_way_penalty=k)
    cs = chunks(r)
    down = [c for c in cs if c.resource == "downlink"]
    up = [c for c in cs if c.resource == "uplink"]
    # transfers still running when the run ends are not in the timeline; each worker's next
    # transfer starts after its last recorded one ended, so the replay is exact until then
    t_safe = min(max(c.end for c in down + up if c.worker == w) for w in range(W))
    seen, checked = False, 0
    for mine, other in ((down, up), (up, down)):
        got, surplus = _fluid_bytes(mine, other, MB, k)
        seen |= surplus
        ok = [g for g, c in zip(got, mine) if c.end <= t_safe]
        checked += len(ok)
        assert ok == pytest.approx([S] * len(ok), rel=1e-6)
    assert checked >= 4 * W
    assert seen  # the rule was exercised, not only the equal case


def test_fine_one_worker_is_untouched_and_more_workers_change():
    kw = dict(coarse="size=10MB,fwd=10ms,bwd=20ms,batch=16", bandwidth="100Mbps",
              replications=1, steps=60, warmup=5)
    base = predict(workers=[1, 4], **kw)
    slowed = predict(workers=[1, 4], two_way_penalty=0.17, **kw)
    assert slowed[0].throughput == pytest.approx(base[0].throughput, rel=1e-9)
    # not necessarily lower: slowing the minority direction also re-phases the workers
    assert slowed[1].throughput != pytest.approx(base[1].throughput, rel=1e-3)


def test_bad_penalties_are_refused_at_the_boundary():
    with pytest.raises(ConfigError, match="two-way-penalty"):
        predict(coarse="size=10MB,fwd=10ms,bwd=20ms,batch=16", workers=2, two_way_penalty=1.0)
    with pytest.raises(ConfigError, match="two-way-penalty"):
        predict(coarse="size=10MB,fwd=10ms,bwd=20ms,batch=16", workers=2,
                two_way_penalty=float("nan"))
    base = {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
            "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0}
    assert hardware_from_dict({**base, "two_way_penalty": 0.2}).predict_kwargs("ps")["two_way_penalty"] == 0.2
    with pytest.raises(Exception, match="two_way_penalty"):
        hardware_from_dict({**base, "two_way_penalty": 1.5})


# ----------------------------------------------------------------------------- the measurement

class _LocalLab:
    """Every 'lab host' is this machine (loopback): enough to run the roles' plumbing."""
    hosts = 4

    def popen(self, i, argv, **kw):
        import subprocess
        return subprocess.Popen(argv, **kw)

    def address(self, i):
        return "127.0.0.1"


def test_a_hub_that_fails_to_start_is_one_line_naming_it():
    import sys

    from sgdsim.errors import SgdsimError
    from sgdsim.lab.procs import start_hub

    argv = [sys.executable, "-c", "import sys; sys.stderr.write('port in use'); sys.exit(2)"]
    with pytest.raises(SgdsimError, match="two-way hub did not start: port in use"):
        start_hub(_LocalLab(), argv, "twoway hub on port", "two-way")


def test_hub_and_peers_stream_both_ways_over_loopback():
    import threading

    from sgdsim.lab import twoway

    lines = []
    t = threading.Thread(target=twoway.hub, args=(1, 1, 1.0),
                         kwargs={"announce": lambda msg, flush=True: lines.append(msg)})
    t.start()
    while not lines:
        threading.Event().wait(0.01)
    port = int(lines[0].split()[-1])
    peers = [threading.Thread(target=twoway.peer, args=("127.0.0.1", port), daemon=True)
             for _ in range(2)]
    for p in peers:
        p.start()
    t.join(10)
    assert not t.is_alive()  # the hub ends after its seconds and closes both streams
    for p in peers:
        p.join(10)
        assert not p.is_alive()


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="the lab needs root")
@pytest.mark.lab
def test_two_way_cases_on_a_real_lab(tmp_path):
    """Four hosts: every split of up to 3 flows runs, each direction is measured from the
    token buckets, the table holds each direction's share against its one-flow rate, and the
    fit is a fraction."""
    from sgdsim.lab.cluster import LabCluster, list_namespaces
    from sgdsim.lab import twoway

    if list_namespaces():
        pytest.skip("sgdsim- namespaces exist; not touching them")
    B = 50e6
    with LabCluster(4, B, state_file=str(tmp_path / "lab.json")) as lab:
        got = twoway.run_lab(lab, run_s=3.0, settle_s=1.0)
    cases = {(c["flows_out"], c["flows_in"]): c for c in got["two_way_cases"]}
    assert set(cases) == {(o, i) for o in range(4) for i in range(4) if 0 < o + i <= 3}
    for (o, i), c in cases.items():  # a shaped link: never above its rate (+ headers)
        for flows, bps in ((o, c["out_bps"]), (i, c["in_bps"])):  # an idle direction: ACKs only
            # the minority direction can starve behind the other's ACKs (1 out against 2 in:
            # 2.9 of 50 Mbit/s once, on a loaded machine): it must move, not reach a share
            ok = 0 < bps <= 1.1 * B if flows else bps < 0.05 * B
            assert ok, f"{o} out, {i} in: {bps / 1e6:.1f} Mbit/s with {flows} flows that way"
    assert cases[(1, 1)]["factor"] > 0.7  # equal flows both ways: both directions nearly full
    assert 0.0 <= got["two_way_penalty"] < 1.0
    t = check_table(got["two_way_table"])
    assert t[0][1][0] == t[1][1][0] == 1.0
    assert t[0][1][2] == pytest.approx(cases[(1, 2)]["out_bps"] / cases[(1, 0)]["out_bps"])
    assert t[1][1][2] == pytest.approx(cases[(2, 1)]["in_bps"] / cases[(0, 1)]["in_bps"])
    assert list_namespaces() == []


# ----------------------------------------------------------------------------- measured tables

def _table(out, into, side=4):
    """A table measured up to side − 1 flows: OUT/IN shares from dicts {(n, m): share}, 1 for
    the splits not given."""
    t = [[[None] * side for _ in range(side)] for _ in range(2)]
    for d, vals in enumerate((out, into)):
        for n in range(1, side):
            for m in range(side - n):
                t[d][n][m] = 1.0
        for (n, m), v in vals.items():
            t[d][n][m] = v
    return t


def test_a_measured_table_sets_each_direction_by_its_own_entry():
    # B = 1 byte/s; 1 flow out of the PS against 3 in keeps 0.5; the 3 in keep 0.9 together
    grid = TwoWay(table=check_table(_table({(1, 3): 0.5}, {(3, 1): 0.9}))).grid(5)
    LK = make_links(2, 4, 0, np.full(2, 1.0), np.full(2, np.inf), None, grid)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)            # downlink = out of the PS
    for w in (1, 2, 3):
        add_flow(LK, 1, w, 10.0, 0.0, w)       # uplink = into the PS
    assert next_time(LK, 0) == pytest.approx(1 / 0.5)
    assert next_time(LK, 1) == pytest.approx(10 / (0.9 / 3))


def test_table_from_cases_normalises_by_one_flow_alone_and_leaves_gaps_empty():
    from sgdsim.lab.twoway import table_from_cases

    rows = [{"flows_out": 1, "flows_in": 0, "out_bps": 90.0, "in_bps": 0.0},
            {"flows_out": 0, "flows_in": 1, "out_bps": 0.0, "in_bps": 80.0},
            {"flows_out": 1, "flows_in": 2, "out_bps": 45.0, "in_bps": 72.0}]
    t = table_from_cases(rows)
    assert t[0][1][0] == 1.0 and t[1][1][0] == 1.0
    assert t[0][1][2] == pytest.approx(0.5)   # out: 1 flow against 2
    assert t[1][2][1] == pytest.approx(0.9)   # in: 2 flows against 1
    assert t[0][2][1] is None and t[1][1][2] is None


def test_repeated_cases_enter_the_table_as_their_mean():
    from sgdsim.lab.twoway import table_from_cases

    rows = [{"flows_out": 1, "flows_in": 0, "out_bps": 100.0, "in_bps": 1.0},
            {"flows_out": 0, "flows_in": 1, "out_bps": 1.0, "in_bps": 100.0},
            {"flows_out": 1, "flows_in": 1, "out_bps": 90.0, "in_bps": 80.0},
            {"flows_out": 1, "flows_in": 1, "out_bps": 70.0, "in_bps": 100.0},
            {"flows_out": 1, "flows_in": 0, "out_bps": 100.0, "in_bps": 1.0}]
    t = table_from_cases(rows)
    assert t[0][1][1] == pytest.approx(0.8) and t[1][1][1] == pytest.approx(0.9)


def test_the_grid_is_the_table_where_measured_and_keeps_proportions_beyond():
    vals = {(n, m): round(1 - 0.05 * m + 0.01 * n, 3) for n in range(1, 4) for m in range(0, 4 - n)}
    t = check_table(_table(vals, vals))  # measured up to 3 flows in all
    g = TwoWay(table=t).grid(7)
    for (n, m), v in vals.items():
        assert g[0][n][m] == v and g[1][n][m] == v
    assert g[0][2][2] == vals[(2, 1)]         # 4 flows, half each way -> 2 of 3 here (rounded)
    assert g[0][1][5] == vals[(1, 2)]         # 1 against 5 -> 1 against 2
    assert g[0][6][0] == vals[(3, 0)]         # alone -> the most flows measured alone


def test_the_linear_rule_as_a_grid_is_the_old_formula():
    g = TwoWay(penalty=0.2).grid(8)
    for n in range(1, 8):
        for m in range(8):
            assert g[0][n][m] == g[1][n][m] == pytest.approx(max(0.05, 1 - 0.2 * max(0, m - n)))


def test_a_table_equal_to_the_rule_gives_the_coarse_model_the_same_answer():
    side = 9
    rule = TwoWay(penalty=0.17)
    g = rule.grid(side)
    table = [[[float(g[d][n][m]) for m in range(side)] for n in range(side)] for d in range(2)]
    via_table = async_ps_sweep(COARSE, 100e6 / 8, [2, 4, 8], "ps", two_way=TwoWay(table=check_table(table)))
    via_rule = async_ps_sweep(COARSE, 100e6 / 8, [2, 4, 8], "ps", two_way=rule)
    assert [r.throughput for r in via_table] == pytest.approx([r.throughput for r in via_rule], rel=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 6), st.floats(0.05, 0.95), st.floats(0.05, 0.95), st.data())
def test_coarse_factors_with_an_asymmetric_table_match_enumeration(K, a, b, data):
    vals = st.floats(0.2, 1.0)
    out = {(n, m): data.draw(vals) for n in range(1, K + 1) for m in range(K + 1 - n)}
    into = {(n, m): data.draw(vals) for n in range(1, K + 1) for m in range(K + 1 - n)}
    grid = TwoWay(table=check_table(_table(out, into, side=K + 1))).grid(K + 1)
    pu, pd = a / 2, b / 2
    num_u = num_d = den_u = den_d = 0.0
    for nu, nd in itertools.product(range(K + 1), repeat=2):
        if nu + nd > K:
            continue
        p = (math.factorial(K) / (math.factorial(nu) * math.factorial(nd) * math.factorial(K - nu - nd))
             * pu ** nu * pd ** nd * (1 - pu - pd) ** (K - nu - nd))
        if nu:
            num_u, den_u = num_u + p * nu * into[(nu, nd)], den_u + p * nu
        if nd:
            num_d, den_d = num_d + p * nd * out[(nd, nu)], den_d + p * nd
    fu, fd = direction_factors(pu * K, pd * K, K, grid)
    assert fu == pytest.approx(num_u / den_u, rel=1e-9)
    assert fd == pytest.approx(num_d / den_d, rel=1e-9)


@pytest.mark.parametrize("table,match", [
    ([[[1.0]]], "shape"),
    ([[[None, None], [None, 0.5]], [[None, None], [1.0, None]]], "alone"),
    ([[[None, None], [1.0, 3.0]], [[None, None], [1.0, None]]], r"\(0, 2\]"),
    ("no", "lists"),
    ([[[None] * 3, [1.0, None, 0.5], [1.0, None, None]],
      [[None] * 3, [1.0, 0.9, 0.5], [1.0, 1.0, None]]], "1 flows against 1 is missing"),
])
def test_bad_tables_are_one_line_errors(table, match):
    with pytest.raises(ConfigError, match=match):
        check_table(table)


def test_the_hardware_file_table_is_the_default_and_an_explicit_penalty_replaces_it(tmp_path, capsys):
    import json
    from sgdsim.cli import main

    hw = {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
          "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0, "two_way_penalty": 0.15,
          "two_way_table": _table({(1, 1): 0.5, (1, 2): 0.4}, {(1, 1): 0.5, (1, 2): 0.4})}
    assert hardware_from_dict(hw).predict_kwargs("ps")["two_way_table"][0][1][1] == 0.5
    assert "two_way_penalty" not in hardware_from_dict(hw).predict_kwargs("ps")
    assert hardware_from_dict(json.loads(json.dumps(hardware_from_dict(hw).to_dict()))) == hardware_from_dict(hw)
    with pytest.raises(Exception, match="two_way_table"):
        hardware_from_dict({**hw, "two_way_table": [[[1.0]]]})
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(hw))
    args = ["predict", "--coarse", "size=10MB,fwd=10ms,bwd=20ms,batch=16", "--workers", "2",
            "--model", "coarse", "--sharing", "ps", "--hardware", str(path), "--format", "json"]
    tput = []
    for extra in ([], ["--two-way-penalty", "0.15"], ["--two-way-penalty", "0"]):
        assert main(args + extra) == 0
        tput.append(json.loads(capsys.readouterr().out)[0]["throughput"])
    # 2 workers: with the table one flow against one the other way keeps half; the rule
    # never slows 1 against 1, so k = 0.15 and k = 0 agree
    assert tput[0] < 0.9 * tput[1] and tput[1] == pytest.approx(tput[2])


def test_a_lab_that_disappears_mid_measurement_is_one_line_that_says_how_to_bring_it_back():
    """netbench --two-way read tc's byte counters of namespaces that had gone: a
    CalledProcessError traceback (issue 39). Now one line naming what failed and what to run."""
    from sgdsim.errors import SgdsimError
    from sgdsim.lab import twoway
    with pytest.raises(SgdsimError) as info:
        twoway._sent("sgdsim-no-such-namespace", "eth0")  # whether or not tc exists here
    text = str(info.value)
    assert "\n" not in text and text.startswith("the lab is gone (")
    assert "sgdsim lab up --hosts N --bandwidth B" in text


@pytest.mark.parametrize("overlap", [False, True])
def test_eq5_keeps_both_branches_as_the_single_discipline_solves_give_them(overlap):
    """Eq. 5 picks one branch by utilization; the result also carries both, each equal to the
    model solved with that discipline alone (two-way slowing the PS branch only), and its own
    throughput is one of them. A forced discipline or a baseline carries none."""
    rule, Ks, B = TwoWay(0.3), [1, 2, 4, 8], 100e6 / 8
    eq5 = eq5_sweep(COARSE, B, Ks, "threshold", overlap=overlap, two_way=rule)
    fcfs = async_ps_sweep(COARSE, B, Ks, "fcfs", overlap=overlap, two_way=rule)
    ps = async_ps_sweep(COARSE, B, Ks, "ps", overlap=overlap, two_way=rule)
    for e, f, p in zip(eq5, fcfs, ps):
        assert e.disciplines == pytest.approx({"fcfs": f.throughput, "ps": p.throughput}, rel=1e-12)
        assert e.throughput in (f.throughput, p.throughput)
        assert f.disciplines == p.disciplines == {}
    assert eq5[0].disciplines["fcfs"] == pytest.approx(eq5[0].disciplines["ps"], rel=1e-9)  # one worker
    assert eq5[-1].disciplines["fcfs"] > eq5[-1].disciplines["ps"]
    lin, coarse = (predict("examples/profiles/resnet50.json", workers=[2], bandwidth="1Gbps", model=m)[0]
                   for m in ("lin", "coarse"))
    assert lin.disciplines == {} and coarse.throughput in coarse.disciplines.values()
