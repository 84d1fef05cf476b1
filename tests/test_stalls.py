"""Stalls: a transfer that starts against traffic the other way waits before its bytes move.

Oracles: hand-computed idle times of two-transfer rounds, the fit on synthetic rounds drawn
from the model (and on rounds without stalls), the engine's timeline against the rule itself
(every transfer moves its wait after it was ready exactly when the other direction was busy
then), and a lone worker or lock-step workers, which never meet traffic the other way.
"""
import importlib

import numpy as np
import pytest

from conftest import chunks, cli_predictions, layered_profile, run_sim
from simcfg import simcfg
from sgdsim.errors import ConfigError
from sgdsim.hardware import hardware_from_dict
from sgdsim.lab.stalls import fit_stalls, fit_waits, idle_s, measured_idle_s
from sgdsim.sim.stalls import STALL_POOL, stall_pool

T = 1.0  # one transfer alone


@pytest.mark.parametrize("delta, wait_a, wait_b, idle", [
    (0.0, 0.0, 0.0, 0.0),  # no waits: the link is busy 2T
    (0.3, 0.0, 0.5, 0.0),  # B's wait ends before A does: A used the link meanwhile
    (0.3, 0.0, 1.2, 0.5),  # B starts at 1.5, A ended at 1: idle 0.5, end 2.5 against 2
    (0.3, 1.6, 0.0, 0.6),  # A starts at 1.6 after B (0.3-1.3) ended: end 2.6 against 2
    (0.3, 0.2, 0.0, 0.2),  # A waits 0.2 s, before B starts: the link idles that long
    (1.5, 0.0, 0.0, 0.0),  # B starts after A ended: δ + T is the end without waits
])
def test_idle_time_of_a_round_by_hand(delta, wait_a, wait_b, idle):
    assert float(idle_s(T, delta, wait_a, wait_b)) == pytest.approx(idle)


def test_measured_idle_time_is_the_last_end_beyond_the_bytes_time():
    rounds = [(0.0, 2.0, 1.9), (0.3, 1.0, 2.8), (1.5, 1.0, 2.5)]
    assert measured_idle_s(T, rounds) == pytest.approx([0.0, 0.8, 0.0])


def _synthetic_rounds(p, mean_s, n, seed):
    rng = np.random.default_rng(seed)
    deltas = rng.choice([0.0, 0.05, 0.1, 0.2, 0.4, 0.6], n)
    waits = np.where(rng.random((2, n)) < p, rng.exponential(mean_s, (2, n)), 0.0)
    idle = idle_s(T, deltas, waits[0], waits[1])  # both start against traffic the other way
    base = np.maximum(2 * T, deltas + T)
    # the last end carries the idle time; which transfer ends last does not matter to the fit
    return [(d, b + i, b - 0.3) for d, b, i in zip(deltas, base, idle)]


def test_the_fit_recovers_the_stalls_of_synthetic_rounds():
    fit = fit_stalls(_synthetic_rounds(0.2, 0.8, 600, seed=3), T)
    assert fit.prob == pytest.approx(0.2, abs=0.06) and fit.mean_s == pytest.approx(0.8, abs=0.25)
    assert fit.stalled_rounds > 0


def test_the_fit_finds_no_stalls_where_the_link_never_idles():
    fit = fit_stalls(_synthetic_rounds(0.0, 0.8, 100, seed=4), T)
    assert (fit.prob, fit.mean_s, fit.stalled_rounds) == (0.0, 0.0, 0)


def test_the_wait_fit_recovers_synthetic_waits_and_finds_none_in_noise():
    rng = np.random.default_rng(5)
    waits = np.where(rng.random(800) < 0.4, rng.exponential(0.3, 800), 0.0)
    fit = fit_waits(waits + rng.uniform(-0.02, 0.03, 800))  # timing noise below the 50 ms floor
    assert fit.prob == pytest.approx(0.4, abs=0.08) and fit.mean_s == pytest.approx(0.3, abs=0.08)
    assert fit_waits(rng.uniform(0.0, 0.03, 24)).prob == 0.0


def test_the_fit_needs_rounds():
    with pytest.raises(ConfigError, match="four rounds"):
        fit_stalls([(0.0, 2.0, 2.0)], T)


def test_the_pool_draws_the_probability_and_the_mean():
    pool = stall_pool(np.random.default_rng(1), (0.25, 0.0), (0.8, 0.0), (0.0, 0.1), (0.0, 0.3))
    pulls, pushes, hit_pulls, hit_pushes = pool.reshape(4, STALL_POOL)
    assert np.mean(pulls > 0) == pytest.approx(0.25, abs=0.03)
    assert pulls[pulls > 0].mean() == pytest.approx(0.8, rel=0.1)
    assert np.mean(hit_pushes > 0) == pytest.approx(0.1, abs=0.02)
    assert hit_pushes[hit_pushes > 0].mean() == pytest.approx(0.3, rel=0.15)
    assert not pushes.any() and not hit_pulls.any()
    assert stall_pool(np.random.default_rng(1), (0.0, 0.0), (1.0, 1.0)) is None


def test_a_paused_flow_keeps_its_bytes_and_its_link_serves_the_others():
    # link 1 at 1 byte/s: A (1 byte) from 0, B (1 byte) from 0.2; A paused 0.4-0.9 (an
    # incumbent hit): 0.2 + 0.4 at half rate leaves A 0.7 and B 0.9; B alone until 0.9 moves
    # 0.5 (0.4 left); then half each: B ends at 0.9 + 0.8 = 1.7, A's 0.3 left at 1.7 end 2.0
    from sgdsim.sim.flows import advance, make_links
    from sgdsim.sim.links import add_flow, next_flow, next_time, remove_flow
    from sgdsim.sim.sharing.fair import set_rate
    from sgdsim.sim.stalls import pause, resume
    LK = make_links(2, 2, 0, np.full(2, 1.0), np.full(2, np.inf), stalls=np.zeros(4 * 2))
    add_flow(LK, 1, 0, 1.0, 0.0, 0)
    advance(LK, 1, 0.2)
    add_flow(LK, 1, 1, 1.0, 0.2, 1)
    advance(LK, 1, 0.4)
    pause(LK, 1, 2)
    set_rate(LK, 1)
    assert next_flow(LK, 1) == 3 and next_time(LK, 1) == pytest.approx(0.4 + 0.9)
    advance(LK, 1, 0.9)
    resume(LK, 1, 2, 2)
    set_rate(LK, 1)
    assert LK.since[2] == 0.0  # its start stays, for the join boost's ages
    assert next_flow(LK, 1) == 3 and next_time(LK, 1) == pytest.approx(1.7)
    remove_flow(LK, 1, 1, 1.7, 3)
    assert next_flow(LK, 1) == 2 and next_time(LK, 1) == pytest.approx(2.0)


# the two-worker oracle of tests/test_starts.py: T = 1 s per transfer, c = 0.25 s
S, BPS, BATCH = 1e6, 1e6, 10
PROFILE = layered_profile([S], [0.1], [0.15], overlap=False, batch=BATCH)
KW = dict(Bps=BPS, steps=12, warmup=0, mode="async", sharing="ps")


def _constant_waits(monkeypatch, wait_s):
    simulate_mod = importlib.import_module("sgdsim.sim.simulate")  # the package exports the function
    waits = np.concatenate([np.full(2 * STALL_POOL, wait_s), np.zeros(2 * STALL_POOL)])  # newcomers
    monkeypatch.setattr(simulate_mod, "stall_pool", lambda rng, *pairs: waits)


def test_every_transfer_waits_exactly_when_the_other_direction_is_busy(monkeypatch):
    _constant_waits(monkeypatch, 0.4)
    res = run_sim(PROFILE, workers=3, start_point=(0.3, 0.65), stall_prob=1.0, stall_mean_s=0.4, **KW)
    cs = chunks(res)
    links = {"down": [c for c in cs if c.resource.startswith("downlink")],
             "up": [c for c in cs if c.resource.startswith("uplink")]}
    ready = {}  # (worker, step, direction) -> when the transfer could start
    for c in cs:
        if c.resource.startswith("worker") and c.op.startswith("bwd"):
            ready[(c.worker, c.step, "up")] = c.end
        if c.resource.startswith("uplink"):
            ready[(c.worker, c.step + 1, "down")] = c.end
    waited = stalled = 0
    for direction, other in (("down", "up"), ("up", "down")):
        for c in links[direction]:
            t = ready.get((c.worker, c.step, direction), 0.0 if c.step == 0 else None)
            if t is None or (c.step == 0 and c.worker > 0):
                continue  # workers 1 and 2 start their first pull at their offsets
            busy = any(o.start < t < o.end for o in links[other])
            assert c.start - t == pytest.approx(0.4 if busy else 0.0, abs=1e-9)
            waited += 1
            stalled += busy
    assert waited > 20 and 0 < stalled < waited


def test_a_lone_worker_and_lock_step_workers_never_stall():
    for workers, start in ((1, ()), (2, (0.0,))):
        kw = dict(KW, workers=workers, start_point=start, timeline=False)
        plain = run_sim(PROFILE, **kw).throughput
        assert run_sim(PROFILE, stall_prob=1.0, stall_mean_s=2.0, stall_incumbent_prob=1.0,
                       stall_incumbent_mean_s=2.0, **kw).throughput == plain
    assert plain == pytest.approx(20 / 4.25)  # both pull, compute, push together


@pytest.mark.parametrize("kw, match", [
    (dict(stall_prob=float("nan")), "stall-prob"),
    (dict(stall_prob=1.5), "stall-prob"),
    (dict(stall_prob=0.1, stall_mean_s=-1.0), "stall-mean"),
    (dict(stall_prob=(0.1, 0.2, 0.3)), "one value or two"),
    (dict(stall_prob=0.1, stall_mean_s=1.0, arch="allreduce", mode="sync"),
     "--stall-prob and --stall-incumbent .* apply to --arch ps"),
    (dict(stall_incumbent_prob=0.1, stall_incumbent_mean_s=1.0, sharing="fcfs"), "--sharing ps"),
    (dict(stall_prob=0.1, stall_mean_s=1.0, flow_cap_bps=1e8), "without --flow-cap"),
    (dict(stall_incumbent_prob=-0.1), "probabilities"),
    (dict(stall_prob=0.2), "needs its mean"),
    (dict(stall_incumbent_mean_s=(0.0, 1.0)), "needs its mean"),
])
def test_bad_stalls_are_refused_at_the_boundary(kw, match):
    with pytest.raises(ConfigError, match=match):
        simcfg(bandwidth_bps=1e9, **kw)


def test_the_hardware_files_stalls_come_with_the_dynamics_only():
    hw = hardware_from_dict({"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8,
                             "latency_s": 0.0, "overhead_alpha_s_per_byte": 8e-8,
                             "overhead_beta_s": 0.0, "stall_prob": 0.1, "stall_mean_s": 0.7,
                             "stall_prob_push": 0.05, "stall_mean_push_s": 0.5})
    assert "stall_prob" not in hw.predict_kwargs("ps", "async")
    on = hw.predict_kwargs("ps", "async", tcp_dynamics=True)
    assert (on["stall_prob"], on["stall_mean"]) == ((0.1, 0.05), (0.7, 0.5))


@pytest.mark.parametrize("extra, message", [
    (["--stall-prob", "2"], "must be probabilities"),
    (["--stall-incumbent", "0.1", "--stall-incumbent-mean", "1", "--mode", "sync"], "--sharing ps"),
    (["--stall-prob", "x"], "--stall-prob must be a number"),
    (["--stall-prob", "0.1", "--stall-mean", "5parsecs"], "parsecs"),
    (["--stall-prob", "0.1", "--arch", "allreduce", "--mode", "sync"], "--arch ps"),
])
def test_predict_refuses_bad_stall_options_in_one_line(capsys, extra, message):
    from sgdsim.cli import main
    args = ["predict", "examples/profiles/alexnet.json", "--workers", "2", "--bandwidth", "1Gbps",
            "--replications", "1", "--steps", "5", "--quiet"]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_predict_takes_the_stalls_from_its_options(capsys):
    rates = cli_predictions(capsys, 4, [], ["--stall-prob", "0.5", "--stall-mean", "200ms"])
    assert rates[0] != rates[1]
