"""Regimes: splitting runs in two, unequal TCP shares, the lab's lock-step index.

Oracles: exhaustive search of every split (best_split), hand-built bimodal and unimodal samples,
exact weighted-sharing completion times (first of n flows with weights w ends at
mean(w)/max(w) of the last), hand-made completion traces (lock-step 0, interleaved 1).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sgdsim.lab.fairness import first_last_ratio, share_cv
from sgdsim.sim.flows import make_links
from sgdsim.sim.links import add_flow, next_flow, next_time, remove_flow, advance
from sgdsim.sim.regimes import best_split, split_modes
from sgdsim.validate.regimes import lockstep_index, windows


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=12))
def test_best_split_is_the_exhaustive_minimum(values):
    x = np.sort(values)

    def sse(k):
        return sum(float(((g - g.mean()) ** 2).sum()) for g in (x[:k], x[k:]) if len(g))

    k = best_split(values)
    assert sse(k) <= min(sse(j) for j in range(1, len(x))) + 1e-6 * (1 + float((x ** 2).sum()))


def test_two_separated_clusters_are_two_regimes_with_their_shares():
    xs = [82.9, 83.1, 83.0, 114.8, 115.0, 82.8, 114.6, 83.2]
    lo, hi = split_modes(xs)
    assert lo.throughput == pytest.approx(np.mean([82.9, 83.1, 83.0, 82.8, 83.2]))
    assert hi.throughput == pytest.approx(np.mean([114.8, 115.0, 114.6]))
    assert (lo.share, hi.share) == (5 / 8, 3 / 8)


@pytest.mark.parametrize("xs", [
    [100.0] * 8,                                    # one value
    list(np.random.default_rng(0).normal(100, 5, 8)),  # one noisy mode
    [83.0, 115.0, 115.2, 114.9, 115.1, 114.8],      # a lone outlier is not a regime
    [100.0, 100.5, 101.0, 101.5],                   # < 3 % apart
])
def test_unimodal_samples_are_not_split(xs):
    assert split_modes(xs) is None


def _links(noise, bw=1.0):
    return make_links(2, 3, 0, np.full(2, bw), np.full(2, bw), noise)


def test_noisy_fair_sharing_gives_each_flow_its_drawn_weight():
    # flows take noise[seq % 4]: seqs 0 and 1 -> weights 0.5 and 1.5, equal sizes of 1 byte
    LK = _links([0.5, 1.5, 1.0, 1.0])
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    add_flow(LK, 0, 1, 1.0, 0.0, 1)
    # shares 0.25 and 0.75 B/s: worker 1 ends at 4/3 s, then worker 0 alone ends at 2 s
    assert next_flow(LK, 0) == 1 and next_time(LK, 0) == pytest.approx(4 / 3)
    advance(LK, 0, 4 / 3)
    remove_flow(LK, 0, 1, 4 / 3, 2)
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(2.0)
    # the link stays full: the first of two ends at mean(w)/max(w) of the last
    assert (4 / 3) / 2.0 == pytest.approx(np.mean([0.5, 1.5]) / 1.5)


def test_without_noise_fair_sharing_is_equal():
    LK = _links(None)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    add_flow(LK, 0, 1, 1.0, 0.0, 1)
    assert next_time(LK, 0) == pytest.approx(2.0)


def _gps_completions(weights):
    """Exact completion times of equal 1-byte transfers sharing a 1 B/s link by weight."""
    w = np.asarray(weights, float)
    rem, active, t, out = np.ones(len(w)), list(range(len(w))), 0.0, [0.0] * len(w)
    while active:
        rate = w[active] / w[active].sum()
        dt = min(rem[active] / rate)
        rem[active] -= rate * dt
        t += dt
        for i in [i for i in active if rem[i] <= 1e-12]:
            out[i] = t
            active.remove(i)
    return out


def _rounds_from_weights(cv, n, rounds, rng):
    s2 = math.log1p(cv * cv)
    return [{"direction": "down",
             "completions_s": _gps_completions(rng.lognormal(-s2 / 2, math.sqrt(s2), n))}
            for _ in range(rounds)]


def test_gps_oracle_first_ends_at_mean_over_max():
    w = [0.5, 1.5, 1.0]
    c = _gps_completions(w)
    assert max(c) == pytest.approx(3.0) and min(c) / max(c) == pytest.approx(np.mean(w) / max(w))


def test_share_cv_recovers_the_spread_that_made_the_rounds():
    rng = np.random.default_rng(3)
    rounds = _rounds_from_weights(0.3, 3, 400, rng)
    assert share_cv(rounds) == pytest.approx(0.3, abs=0.03)
    # equal completions mean equal shares
    assert share_cv([{"direction": "up", "completions_s": [2.0, 2.0, 2.0]}]) == pytest.approx(0, abs=1e-6)


def test_first_last_ratio_is_mean_over_max_of_weights():
    assert first_last_ratio(0.0, 3, np.random.default_rng(0)) == 1.0
    assert first_last_ratio(0.5, 3, np.random.default_rng(0)) < first_last_ratio(0.2, 3, np.random.default_rng(0))


def test_lockstep_index_is_zero_in_lock_step_and_one_interleaved():
    period = 2.0
    a = np.arange(1, 30) * period
    assert lockstep_index([a, a.copy()], 0, 60) == pytest.approx(0.0)
    assert lockstep_index([a, a + period / 2], 0, 60) == pytest.approx(1.0, rel=0.05)
    assert math.isnan(lockstep_index([a], 0, 60))


def test_windows_count_examples_per_second():
    a = np.arange(1, 21) * 1.0  # one step per second for 20 s
    ws = windows([a, a], batch_size=16, start_s=0.0, end_s=20.0, window_s=5.0)
    assert [w.start_s for w in ws] == [0.0, 5.0, 10.0, 15.0]
    assert all(w.throughput == pytest.approx(2 * 16) for w in ws)


def test_concurrency_shares_of_hand_made_intervals():
    from sgdsim.validate.regimes import concurrency_shares

    # [0, 2] and [1, 3]: one open during 0-1 and 2-3, two during 1-2
    assert concurrency_shares([(0.0, 2.0), (1.0, 3.0)]) == {0: 0.0, 1: pytest.approx(2 / 3),
                                                           2: pytest.approx(1 / 3)}
    # a gap counts as zero open
    assert concurrency_shares([(0.0, 1.0), (2.0, 3.0)]) == {0: pytest.approx(1 / 3), 1: pytest.approx(2 / 3)}


def test_transfer_stats_pairs_worker_and_ps_records():
    from sgdsim.validate.regimes import transfer_stats

    ps = [{"event": "ps_step", "rank": 0, "step": 0, "down_start": [10.2, 10.5], "up_end": [12.0, 12.4]},
          {"event": "ps_step", "rank": 0, "step": 1, "down_start": [12.5], "up_end": [13.5]},
          {"event": "ps_step", "rank": 1, "step": 0, "down_start": [10.6], "up_end": [13.0]}]
    w0 = [{"event": "step", "rank": 0, "step": 0, "t_pull": 10.0, "down_end": [10.9, 11.0],
           "up_start": [11.5, 11.2]}]
    w1 = [{"event": "step", "rank": 1, "step": 0, "t_pull": 10.5, "down_end": [11.5], "up_start": [12.0]}]
    st = transfer_stats([ps, w0, w1], model_bytes=1e6)
    assert st["steps"] == 2
    # worker 0: its last gradient byte at 12.4, the next step's first parameter byte at 12.5
    assert st["ps_gap_median_s"] == pytest.approx(0.1) and st["ps_gap_max_s"] == pytest.approx(0.1)
    # pulls [10.2, 11.0] and [10.6, 11.5]: both open during 10.6-11.0 (0.4 of 1.3 s)
    assert st["pulling"][2] == pytest.approx(0.4 / 1.3)
    # two 1 MB pulls in 1.3 busy seconds; pushes [11.2, 12.4] and [12.0, 13.0]: 1.8 s busy
    assert st["down_busy_bps"] == pytest.approx(8 * 2e6 / 1.3)
    assert st["up_busy_bps"] == pytest.approx(8 * 2e6 / 1.8)


def _forward_starts(share_cv, seed):
    from conftest import chunks, layered_profile, run_sim

    prof = layered_profile([1e6], [0.01], [0.02], overlap=False)
    r = run_sim(prof, workers=2, Bps=1e7, steps=15, warmup=0, seed=seed, share_cv=share_cv)
    starts = {}
    for c in chunks(r):
        if c.op == "fwd:L0":
            starts.setdefault(c.step, {})[c.worker] = c.start
    return [s[1] - s[0] for _, s in sorted(starts.items()) if len(s) == 2]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equal_sharing_preserves_any_offset_between_two_workers(seed):
    """Why async convoys last forever with equal shares and a deterministic profile: a transfer
    started δ earlier ends δ earlier (2M/B − δ against 2M/B), so every step keeps the offset
    the random start gave. Ties are not the cause; the symmetry of equal shares is."""
    offsets = _forward_starts(0.0, seed)[1:]  # the first step is the start's transient
    assert len(offsets) >= 10
    assert max(offsets) - min(offsets) == pytest.approx(0.0, abs=1e-9)


def test_unequal_shares_move_the_offset():
    offsets = _forward_starts(0.3, 1)[1:]
    assert max(offsets) - min(offsets) > 1e-3


def test_together_pairs_transfers_that_start_at_once():
    from sgdsim.validate.regimes import together

    # A: 0-1 and 10-11.8; B: 0.02-1.1 (starts within 3 % of A's 1 s), 10.5-11 (0.5 s late:
    # not together), 20-21 (A has none then)
    got = together([(0.0, 1.0), (10.0, 11.8)], [(0.02, 1.1), (10.5, 11.0), (20.0, 21.0)])
    assert got == [pytest.approx([0.98, 1.08])]


def test_pull_phases_place_each_pull_within_the_other_workers_step():
    from sgdsim.validate.regimes import phase_steps, pull_phases

    # A's steps start at 0, 10, 30; B's pulls at 5 (half of A's first step), 10 (with A's
    # second: lock-step, 0), 25 (three quarters of the 20-s second step); before A's first
    # and after A's last one there is no step to place them in
    got = pull_phases([0.0, 30.0, 10.0], [-1.0, 5.0, 10.0, 25.0, 31.0])
    assert got.tolist() == [0.5, 0.0, 0.75]
    _, step_s = phase_steps([0.0, 30.0, 10.0], [-1.0, 5.0, 10.0, 25.0, 31.0])
    assert step_s.tolist() == [10.0, 20.0, 20.0]


def test_phase_occupancy_folds_phases_to_their_distance_from_lock_step():
    from sgdsim.validate.regimes import phase_occupancy

    # 0.97 is as close to lock-step as 0.03; 0.5 (interleaved) falls in the last bin
    got = phase_occupancy([0.0, 0.02, 0.97, 0.5, 0.45, 0.25])
    assert got.tolist() == pytest.approx([3 / 6, 0, 0, 1 / 6, 0, 2 / 6])


def test_joiner_share_is_one_half_under_equal_sharing_whatever_the_offset():
    from sgdsim.validate.regimes import joiner_shares

    # one transfer alone takes 1 s; A starts at 0, B at 0.4: A alone moves 0.4, then each
    # moves at 1/2, A's last 0.6 take 1.2 s (A ends at 1.6) and B's last 0.4 alone (ends at 2)
    assert joiner_shares([(0.0, 1.6)], [(0.4, 2.0)], 1.0) == [pytest.approx((0.4, 0.5))]


def test_joiner_share_of_a_late_comer_that_takes_two_thirds_and_ends_first():
    from sgdsim.validate.regimes import joiner_shares

    # B joins at 0.4 and takes 2/3 of the link: its 1 s of work takes 1.5 s (ends at 1.9),
    # A moved 0.5 meanwhile and ends at 2.0; the pair is found whichever worker B is, and a
    # transfer that overlaps neither is no pair
    got = joiner_shares([(0.4, 1.9), (5.0, 6.0)], [(0.0, 2.0)], 1.0)
    assert got == [pytest.approx((0.4, 2 / 3))]


def test_against_opposite_keeps_transfers_that_start_with_one_the_other_way():
    from sgdsim.validate.regimes import against_opposite

    mine = [(0.0, 1.0), (5.0, 6.5), (10.0, 11.0), (20.0, 21.2)]
    opposite = [(0.05, 1.0), (5.02, 6.0), (20.0, 21.0)]   # none near 10
    same = [(19.5, 20.5)]                                  # runs when the one at 20 starts
    # 0.05 s is within 0.1 of the lone 1 s; the slowed one (1.5) is kept
    assert against_opposite(mine, opposite, same, 1.0) == pytest.approx([1.0, 1.5])


def test_two_worker_traces_skip_untraced_runs_and_other_worker_counts():
    from sgdsim.validate.regimes import two_worker_traces

    ps = [{"event": "ps_step", "rank": 0, "step": 0, "down_start": [1.0], "up_end": [4.0]}]
    worker = [{"event": "step", "rank": 0, "step": 0, "down_end": [2.0], "up_start": [3.0]}]
    runs = [{"workers": 2, "events": [ps, worker]}, {"workers": 2, "events": []},
            {"workers": 3, "events": [ps, worker]}]
    assert two_worker_traces(runs) == [{0: [((1.0, 2.0), (3.0, 4.0))]}]


def _restoring_pair(x0: float, kappa: float, steps: int = 12):
    """A's steps every second (pull 0.3 s, 0.2 s compute, push 0.3 s, 0.2 s gap); B starts x0
    later and its pull takes kappa·x less, so its offset shrinks by that fraction per step."""
    a = [((k, k + 0.3), (k + 0.5, k + 0.8)) for k in range(steps)]
    b, start = [], x0
    for k in range(steps):
        x = start - k
        pull_end = start + 0.3 - kappa * x
        b.append(((start, pull_end), (pull_end + 0.2, pull_end + 0.5)))
        start = pull_end + 0.7
    return a, b


@pytest.mark.parametrize("x0", [0.1, -0.1])
def test_leg_slopes_find_the_leg_that_restores_lock_step(x0):
    from sgdsim.validate.regimes import leg_slopes
    a, b = _restoring_pair(x0, 0.2)
    out = leg_slopes(a, b, within_s=0.5)
    assert out["pull"][0] == pytest.approx(-0.2) and out["pull"][2] == pytest.approx(0.0, abs=1e-12)
    assert out["total"][0] == pytest.approx(-0.2)
    assert out["compute"][0] == pytest.approx(0.0, abs=1e-12) and out["push"][0] == pytest.approx(0.0, abs=1e-12)
    assert out["total"][3] == 11  # every step but the last has a next one


def test_leg_slopes_pair_only_steps_within_the_window():
    from sgdsim.validate.regimes import leg_slopes
    a, b = _restoring_pair(0.4, 0.2)  # offsets 0.4, 0.32, 0.256, ...
    far = leg_slopes(a, b, within_s=0.35)["total"][3]
    assert far == 10  # the first pair (0.4 s apart) is left out
    assert math.isnan(leg_slopes(a[:3], b[:3], within_s=0.35)["pull"][0])  # one pair: no slope
