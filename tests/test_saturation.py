"""The coarse async model beyond the knee (analytic/saturation.py): the saturated links' rate,
checked against a hand-computed timeline of a deterministic cyclic network."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from sgdsim.analytic.async_ps import async_ps, async_ps_sweep, eq5_sweep
from sgdsim.analytic.baselines import lin_sweep
from sgdsim.analytic.coarse_profile import CoarseProfile
from sgdsim.analytic.two_way import TwoWay, saturated_shares
from sgdsim.spec.two_way import with_busy

B = 100e6 / 8  # bytes/s


def _profile(model_bytes=4e6, compute_s=0.05, update_s=0.004, batch=32, overlap=False):
    return CoarseProfile(model_bytes=model_bytes, forward_s=compute_s / 3, backward_s=2 * compute_s / 3,
                         update_s=update_s, batch_size=batch, overlap=overlap)


def _timeline_examples_s(S_compute, S_up, S_update, S_down, K, batch, cycles=400):
    """A cyclic network of deterministic stations, worked out step by step: each worker
    computes (its own), then queues FCFS for the uplink, the update and the downlink. With
    equal service times the workers keep their order, so job n is worker n mod K's (n // K)-th
    step and each station's departures follow d(n) = max(arrival(n), d(n - 1)) + S."""
    n_jobs = K * cycles
    up, upd, down = [0.0] * n_jobs, [0.0] * n_jobs, [0.0] * n_jobs
    for n in range(n_jobs):
        arrive = (down[n - K] if n >= K else 0.0) + S_compute
        up[n] = max(arrive, up[n - 1] if n else 0.0) + S_up
        upd[n] = max(up[n], upd[n - 1] if n else 0.0) + S_update
        down[n] = max(upd[n], down[n - 1] if n else 0.0) + S_down
    half = n_jobs // 2  # past the start, where every worker leaves at once
    return (n_jobs - 1 - half) * batch / (down[-1] - down[half])


@pytest.mark.parametrize("K", [4, 6, 16])
def test_beyond_the_knee_the_model_is_the_deterministic_timeline(K):
    """Past N* + 1 the answer is the timeline's: the busiest link never idles."""
    c = _profile()
    link_s = c.model_bytes / B
    want = _timeline_examples_s(c.compute_s, link_s, c.update_s, link_s, K, c.batch_size)
    assert want == pytest.approx(c.batch_size / link_s, rel=1e-9)  # the hand-computed bound
    r = async_ps_sweep(c, B, [K])[0]
    assert r.regime.startswith("saturated (uplink")
    assert r.throughput == pytest.approx(want, rel=1e-9)
    assert r.throughput > eq5_sweep(c, B, [K])[0].throughput  # Eq. 5's MVA is still short of it
    cycle = sum(r.response_time_s.values())  # Little: K workers, each one step per cycle
    assert K * c.batch_size / cycle == pytest.approx(r.throughput, rel=1e-9)
    assert max(r.utilization[k] for k in ("uplink", "downlink")) == pytest.approx(1.0)


def test_the_two_way_rule_slows_the_saturated_links_by_its_busy_share():
    """With the lab's busy shares (a NIC with 3+ transfers both ways delivers 0.74 / 0.79 of
    each direction), the saturated rate is the slower direction's: b · f / (M / B)."""
    table = [[[None] * 9 for _ in range(9)] for _ in range(2)]
    for d in range(2):
        for n in range(9):
            for m in range(9):
                table[d][n][m] = 1.0
    rule = TwoWay(table=with_busy(table, (0.74, 0.79)))
    f_in, f_out = saturated_shares(rule)
    assert (f_in, f_out) == pytest.approx((0.79, 0.74))
    c = _profile()
    link_s = c.model_bytes / B
    r = async_ps_sweep(c, B, [12], two_way=rule)[0]
    assert r.throughput == pytest.approx(c.batch_size * 0.74 / link_s, rel=1e-12)
    assert r.regime.startswith("saturated (downlink")
    want = _timeline_examples_s(c.compute_s, link_s / f_in, c.update_s, link_s / f_out, 12, c.batch_size)
    assert r.throughput == pytest.approx(want, rel=1e-9)
    assert saturated_shares(TwoWay(0.3)) == (1.0, 1.0)  # the linear rule spares balanced traffic


def test_between_the_knee_and_one_worker_past_it_the_answer_is_linear_in_K():
    """N* = X_sat / X(1) = 2.5 here: K = 2 is Eq. 5's, K = 3 halfway from Eq. 5 to the bound,
    K = 4 the bound; the step time follows by Little's law."""
    link_s, update_s = 0.2, 0.0
    compute_s = 2.5 * link_s - 2 * link_s  # cycle = 2.5 link transfers: N* = 2.5
    c = _profile(model_bytes=link_s * B, compute_s=compute_s, update_s=update_s)
    X1 = c.batch_size / (compute_s + 2 * link_s)
    X_sat = c.batch_size / link_s
    eq5 = {r.workers: r for r in eq5_sweep(c, B, [1, 2, 3, 4])}
    new = {r.workers: r for r in async_ps_sweep(c, B, [1, 2, 3, 4])}
    assert X_sat / X1 == pytest.approx(2.5)
    assert new[1] == eq5[1] and new[2] == eq5[2]
    half = eq5[3].throughput + 0.5 * (X_sat - eq5[3].throughput)
    assert new[3].throughput == pytest.approx(half, rel=1e-12)
    assert new[3].step_time_s == pytest.approx(3 * c.batch_size / half, rel=1e-12)
    assert "50% of the way" in new[3].regime
    assert new[4].throughput == pytest.approx(X_sat, rel=1e-12)


def test_published_forms_keep_the_papers_model():
    """A forced discipline, several servers, heterogeneous classes and Lin's baseline are
    the TPDS equations as published: no saturation rule."""
    c, Ks = _profile(), [1, 2, 4, 8, 16]
    for sharing in ("fcfs", "ps"):
        assert async_ps_sweep(c, B, Ks, sharing) == eq5_sweep(c, B, Ks, sharing)
    two = (0.5, 0.5)
    assert async_ps_sweep(c, B, Ks, fractions=two) == eq5_sweep(c, B, Ks, fractions=two)
    plain = {r.workers: r.throughput for r in eq5_sweep(c, B, Ks, overlap=False)}
    assert {r.workers: r.throughput for r in lin_sweep(c, B, Ks)} == plain
    other = _profile(compute_s=0.06)
    mixed = async_ps([(c, 4), (other, 4)], B)
    assert not mixed.regime.startswith("saturated")


def test_overlap_changes_the_cycle_not_the_saturated_rate():
    c, over = _profile(), _profile(overlap=True)
    a, b = async_ps_sweep(c, B, [16])[0], async_ps_sweep(over, B, [16])[0]
    assert a.throughput == pytest.approx(b.throughput, rel=1e-12)
    assert eq5_sweep(over, B, [1])[0].throughput > eq5_sweep(c, B, [1])[0].throughput


@settings(max_examples=40, deadline=None)
@given(model_mb=st.floats(0.1, 200), compute_s=st.floats(0.001, 2.0), update_s=st.floats(0.0, 0.05),
       penalty=st.floats(0.0, 0.5), K=st.integers(1, 32))
def test_never_below_eq5_nor_above_the_bounds(model_mb, compute_s, update_s, penalty, K):
    """Property: Eq. 5 up to the knee; past it, between Eq. 5 and the asymptotic bounds
    min(K X(1), X_sat); exactly X_sat (or Eq. 5, if that is higher) from N* + 1 on."""
    c = _profile(model_bytes=model_mb * 1e6, compute_s=compute_s, update_s=update_s)
    rule = TwoWay(penalty)
    e1, eK = (eq5_sweep(c, B, [k], two_way=rule)[0] for k in (1, K))
    r = async_ps_sweep(c, B, [K], two_way=rule)[0]
    link_s = c.model_bytes / B
    X_sat = c.batch_size / max(link_s, c.update_s)
    knee = X_sat / e1.throughput
    assert r.throughput >= eK.throughput * (1 - 1e-12)
    if K <= knee:
        assert r == eK
    elif K >= knee + 1:
        assert r.throughput == pytest.approx(max(X_sat, eK.throughput), rel=1e-12)
    else:
        assert r.throughput <= max(min(K * e1.throughput, X_sat), eK.throughput) * (1 + 1e-12)


def test_the_two_way_fixed_point_settles_where_its_first_steps_cycle(monkeypatch):
    """Two PS on the lab's measured table past 24 workers: the damped iteration's first steps
    overshoot into a two-state cycle (the answer was whichever state the last round left, 40 %
    low at W = 32). Smaller steps settle it: the answer no longer depends on the round count,
    and the sweep does not fall past 24 workers."""
    import sgdsim
    from sgdsim.analytic import two_way
    from sgdsim.analytic.coarse_profile import from_profile
    from sgdsim.analytic.two_way import check_table
    from sgdsim.hardware import load_hardware

    c = from_profile(sgdsim.load_profile("docs/validation/2ps/profiles/mlp10-async-2ps.json"))
    hw = load_hardware("examples/grids/hardware-lab-100mbps.json")
    rule = TwoWay(hw.two_way_penalty, check_table(hw.two_way_table))
    Ks, link_Bps, two = [8, 16, 24, 28, 32, 48, 64], hw.bandwidth_bps / 8, (0.5, 0.5)
    sweep = [r.throughput for r in eq5_sweep(c, link_Bps, Ks, "ps", two_way=rule, fractions=two)]
    assert all(b >= a * 0.99 for a, b in zip(sweep, sweep[1:])), sweep
    monkeypatch.setattr(two_way, "MAX_ROUNDS", two_way.MAX_ROUNDS + 1)  # the other phase of a cycle
    again = [r.throughput for r in eq5_sweep(c, link_Bps, Ks, "ps", two_way=rule, fractions=two)]
    assert again == pytest.approx(sweep, rel=1e-5)


def test_a_job_that_shares_nothing_keeps_eq5():
    """No bytes and no update: no shared station, no saturation (it divided by zero)."""
    c = _profile(model_bytes=0.0, update_s=0.0)
    Ks = [1, 4, 1000]
    assert async_ps_sweep(c, B, Ks) == eq5_sweep(c, B, Ks)
    assert [r.throughput for r in async_ps_sweep(c, B, Ks)] == pytest.approx([K * 32 / 0.05 for K in Ks])


def test_counts_above_the_cached_ones_reach_the_same_fixed_point_sooner(monkeypatch):
    """Above 128 workers most counts cycle under the half steps (one PS, the lab's table), so
    they take the smaller steps after LARGE_FIRST_ROUNDS instead of MAX_ROUNDS: the same
    answers as the long schedule, each count as when asked alone, and the counts up to 128
    exactly as before (their own schedule)."""
    import sgdsim
    from sgdsim.analytic import two_way
    from sgdsim.analytic.coarse_profile import from_profile
    from sgdsim.analytic.two_way import check_table, with_busy
    from sgdsim.hardware import load_hardware

    c = from_profile(sgdsim.load_profile("tests/data/lab-mlp-10mb-nooverlap.json"))
    hw = load_hardware("examples/grids/hardware-lab-100mbps.json")
    rule = TwoWay(hw.two_way_penalty, with_busy(check_table(hw.two_way_table),
                                                (hw.two_way_busy, hw.two_way_busy_push)))
    link_Bps = hw.bandwidth_bps / 8

    def sweep(Ks):
        return [r.throughput for r in eq5_sweep(c, link_Bps, Ks, "ps", two_way=rule)]
    Ks = [8, 64, 300, 301, 420]
    fast = sweep(Ks)
    assert fast[:2] == sweep(Ks[:2])  # the small counts: untouched by the large ones
    assert fast[2:] == pytest.approx([sweep([K])[0] for K in Ks[2:]], rel=1e-5)
    monkeypatch.setattr(two_way, "LARGE_FIRST_ROUNDS", two_way.MAX_ROUNDS)  # the long schedule
    assert sweep(Ks) == pytest.approx(fast, rel=1e-5)
