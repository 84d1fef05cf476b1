"""The late-comer's advantage: a flow joining a busy link gets ``join_boost`` times the weight.

Oracles: hand-computed two- and three-flow link timelines, the two-pull closed form against
the same hand numbers and against work conservation, the fit on exact synthetic rounds, and
the two-worker closed form of tests/test_starts.py (equal sharing keeps a start offset δ,
every step takes 4T + c − 2δ): a boost must shrink δ to below ``join_after``.
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import cli_predictions, layered_profile, run_sim
from simcfg import simcfg
from sgdsim.errors import ConfigError
from sgdsim.hardware import hardware_from_dict
from sgdsim.lab.joiner import fit_join, two_flow_ends
from sgdsim.sim.flows import make_links
from sgdsim.sim.links import add_flow, advance, next_flow, next_time, remove_flow
from sgdsim.validate.grid import parse_grid


def _links(boost, after_s, W=3):
    """Link 0 (the PS's downlink, pulls) has the boost; link 1 (pushes) shares equally."""
    return make_links(2, W, 0, np.full(2, 1.0), np.full(2, np.inf), join=((boost, 1.0), (after_s, 0.0), (0.0, 0.0)))


def test_a_late_joiner_gets_its_boost_and_ends_first():
    # B = 1 byte/s; A: 1 byte from t = 0; B: 1 byte from 0.4, weight 2 -> 2/3 of the link.
    # A has 0.6 left: alone it would need 0.6 / (1/3) = 1.8 s, B needs 1 / (2/3) = 1.5 s.
    LK = _links(2.0, 0.3)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 0, 0.4)
    add_flow(LK, 0, 1, 1.0, 0.4, 1)
    assert next_flow(LK, 0) == 1 and next_time(LK, 0) == pytest.approx(1.9)
    remove_flow(LK, 0, 1, 1.9, 2)  # A moved 0.5 in 1.5 s: 0.1 left alone
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(2.0)
    assert two_flow_ends(1.0, 0.4, 2.0) == pytest.approx((2.0, 1.9))


def test_pushes_keep_equal_shares_when_only_pulls_have_the_boost():
    LK = _links(2.0, 0.3)
    add_flow(LK, 1, 0, 1.0, 0.0, 0)
    advance(LK, 1, 0.4)
    add_flow(LK, 1, 1, 1.0, 0.4, 1)  # A has 0.6 left at half rate: ends 1.6, B 0.4 later
    assert next_flow(LK, 1) == 3 + 0 and next_time(LK, 1) == pytest.approx(1.6)  # flow l·W + w


def test_a_joiner_before_join_after_shares_equally():
    LK = _links(2.0, 0.3)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 0, 0.2)
    add_flow(LK, 0, 1, 1.0, 0.2, 1)  # A has 0.8 left at half rate
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(1.8)
    assert two_flow_ends(1.0, 0.2, 1.0) == pytest.approx((1.8, 2.0))


def test_the_next_arrival_takes_the_boost_away():
    # A from 0; B joins at 0.4 (A is 0.4 old: B weight 2); C joins at 0.5, B only 0.1 old:
    # no boost for C, and B goes back to 1. A: 0.4 alone, 0.1 at 1/3 -> 0.5667 left at 1/3.
    LK = _links(2.0, 0.3)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 0, 0.4)
    add_flow(LK, 0, 1, 1.0, 0.4, 1)
    advance(LK, 0, 0.5)
    add_flow(LK, 0, 2, 1.0, 0.5, 2)
    assert list(LK.weight[:3]) == [1.0, 1.0, 1.0]
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(0.5 + 3 * (0.6 - 0.1 / 3))


@settings(max_examples=60, deadline=None)
@given(delta=st.floats(0.0, 0.99), boost=st.floats(0.2, 5.0))
def test_two_pulls_keep_the_link_busy_and_equal_sharing_keeps_the_offset(delta, boost):
    ends = two_flow_ends(1.0, delta, boost)
    assert max(ends) == pytest.approx(2.0)  # work-conserving: 2 T of work, never idle
    assert ends[1] - delta >= 1.0 - 1e-9  # never faster than alone
    assert two_flow_ends(1.0, delta, 1.5 * boost)[1] <= ends[1] + 1e-9  # more weight, sooner
    a, b = two_flow_ends(1.0, delta, 1.0)
    assert b - a == pytest.approx(delta)


def test_the_fit_recovers_exact_rounds_and_finds_no_boost_in_equal_sharing():
    offsets = [0.0, 0.1, 0.2, 0.4, 0.6]
    rounds = [(d, np.subtract(*two_flow_ends(0.8, d, 1.7 if d >= 0.3 else 1.0)[::-1]))
              for d in offsets for _ in range(3)]
    fit = fit_join(rounds, 0.8)
    assert (fit.boost, fit.after_s) == (pytest.approx(1.7), pytest.approx(0.3))
    assert fit.rms_gap_s == pytest.approx(0.0, abs=1e-9) and fit.equal_rms_gap_s > 0.05
    equal = fit_join([(d, d) for d in offsets], 0.8)
    assert equal.boost == 1.0 and equal.rms_gap_s == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ConfigError):
        fit_join([], 0.8)


# the two-worker oracle of tests/test_starts.py: T = 1 s per transfer, c = 0.25 s, P = 2.25 s
S, BPS, BATCH, C = 1e6, 1e6, 10, 0.25
PROFILE = layered_profile([S], [0.1], [0.15], overlap=False, batch=BATCH)


def test_the_boost_pulls_two_async_workers_into_lock_step():
    # started 0.675 s apart (u = 0.3): equal sharing keeps that offset, 20 / (4.25 - 1.35);
    # weight 3 after 50 ms: the first overlap leaves them 25 ms apart (B needs 1/0.75 s, A's
    # 0.325 s left take 1.3 s at 1/4), and below 50 ms equal sharing keeps it: 20 / 4.2
    kw = dict(workers=2, Bps=BPS, steps=30, warmup=5, mode="async", sharing="ps",
              start_point=(0.3,), timeline=False)
    assert run_sim(PROFILE, **kw).throughput == pytest.approx(20 / 2.9, rel=1e-9)
    boosted = run_sim(PROFILE, join_boost=3.0, join_after_s=0.05, **kw).throughput
    assert 20 / (4 + C) <= boosted + 1e-9 and boosted <= 20 / (4 + C - 0.1) + 1e-9
    assert boosted == pytest.approx(20 / 4.2, rel=1e-9)


@pytest.mark.parametrize("kw, match", [
    (dict(join_boost=float("nan")), "join-boost"),
    (dict(join_boost=0.0), "join-boost"),
    (dict(join_boost=2.0, join_after_s=-1.0), "join-after"),
    (dict(join_boost=2.0, sharing="fcfs"), "applies to --sharing ps"),
    (dict(join_boost=2.0, flow_cap_bps=1e8), "without --flow-cap"),
    (dict(join_boost=(1.0, 2.0, 3.0)), "one value or two"),
    (dict(join_boost="many"), "pulls, pushes"),
    (dict(join_boost=(1.0, -2.0)), "join-boost"),
])
def test_bad_boosts_are_refused_at_the_boundary(kw, match):
    with pytest.raises(ConfigError, match=match):
        simcfg(bandwidth_bps=1e9, **kw)


BASE_HW = {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
           "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0, "share_cv": 0.3,
           "join_boost": 1.4, "join_after_s": 0.05}


def test_a_boost_without_its_onset_applies_only_when_asked_and_only_to_async_ps_of_one_server():
    # (with a measured onset, join_delay_s, it is the default: tests/test_onset.py)
    hw = hardware_from_dict(BASE_HW)
    assert "join_boost" not in hw.predict_kwargs("ps", "async") and "share_cv" not in hw.predict_kwargs("ps")
    on = hw.predict_kwargs("ps", "async", tcp_dynamics=True)
    assert (on["join_boost"], on["join_after"], on["share_cv"]) == ((1.4, 1.0), (0.05, 0.0), 0.3)
    both = hardware_from_dict({**BASE_HW, "join_boost_push": 1.2, "join_after_push_s": 0.1})
    assert both.predict_kwargs("ps", "async", tcp_dynamics=True)["join_boost"] == (1.4, 1.2)
    assert hw.predict_kwargs("ps", tcp_dynamics=True) == on  # no mode: predict's default, async
    for args in (("ps", "sync"), ("ps", "async", 2), ("ps", "async", 1, "fcfs"), ("allreduce", "sync"),
                 ("allreduce", None)):
        got = hw.predict_kwargs(*args, tcp_dynamics=True)
        assert "join_boost" not in got and "share_cv" not in got
    # without a measured boost the spread stays out too: alone it biases the regimes
    no_boost = hardware_from_dict({k: v for k, v in BASE_HW.items() if k != "join_boost"})
    assert "share_cv" not in no_boost.predict_kwargs("ps", "async", tcp_dynamics=True)
    with pytest.raises(Exception, match="join_boost"):
        hardware_from_dict({**BASE_HW, "join_boost": -1})


def test_a_grid_turns_the_dynamics_on_with_a_boolean_only(tmp_path):
    (tmp_path / "hw.json").write_text(json.dumps(BASE_HW))
    case = {"name": "c", "model": "lab:mlp-10mb", "workers": "1,2", "hardware": "hw.json",
            "batch_size": 16, "bandwidth": "100Mbps"}
    off = parse_grid({"case": [case]}, str(tmp_path / "g.toml")).cases[0]
    on = parse_grid({"case": [{**case, "tcp_dynamics": True}]}, str(tmp_path / "g.toml")).cases[0]
    assert on.network()["join_boost"] == (1.4, 1.0) and "join_boost" not in off.network()
    with pytest.raises(ConfigError, match="tcp_dynamics"):
        parse_grid({"case": [{**case, "tcp_dynamics": "yes"}]}, str(tmp_path / "g.toml"))


def test_predict_takes_the_boosts_from_its_options(capsys):
    rates = cli_predictions(capsys, 2, [], ["--join-boost", "3,1", "--join-after", "1ms"])
    assert rates[0] != rates[1]


# ----------------------------------------------------------------------------- the measurement

def test_the_hub_starts_the_second_transfer_at_its_offset_over_loopback():
    import threading

    from sgdsim.lab import fairness, joiner

    lines, result = [], {}
    size = 4_000_000
    t = threading.Thread(target=lambda: result.update(joiner.hub(size, 1, 0.0, announce=lambda m, flush=True: lines.append(m))))
    t.start()
    while not lines:
        threading.Event().wait(0.01)
    port = int(lines[0].split()[-1])
    for _ in range(2):
        threading.Thread(target=fairness.peer, args=("127.0.0.1", port, size), daemon=True).start()
    t.join(60)
    assert not t.is_alive()
    for direction in ("down", "up"):
        got = result[direction]
        assert got["lone_s"] > 0 and len(got["rounds"]) == len(joiner.FRACTIONS)
        for (nominal, gap, started), frac in zip(got["rounds"], joiner.FRACTIONS):
            assert nominal == pytest.approx(frac * got["lone_s"])
            assert started == pytest.approx(nominal, abs=0.05)  # the hub keeps the offset
    fits = joiner.summarize(result)["fits"]
    assert all(1.0 <= f["boost"] <= 4.0 and f["rms_gap_s"] <= f["equal_rms_gap_s"] + 1e-12
               for f in fits.values())


def test_netbench_joiner_options_are_checked_before_measuring(capsys):
    from sgdsim.cli import main
    assert main(["netbench", "--local", "--joiner"]) == 2
    assert "need --lab" in capsys.readouterr().err
    assert main(["netbench", "--lab", "--joiner", "--joiner-size", "0"]) == 2
    assert "--joiner-size" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="the lab needs root")
@pytest.mark.lab
def test_joiner_rounds_on_a_real_lab(tmp_path):
    """Three hosts at 50 Mbit/s: a lone 1 MB transfer takes its shaped time each way, and the
    late one starts at its offset."""
    from sgdsim.lab import joiner
    from sgdsim.lab.cluster import LabCluster, list_namespaces

    if list_namespaces():
        pytest.skip("sgdsim- namespaces exist; not touching them")
    with LabCluster(3, 50e6, state_file=str(tmp_path / "lab.json")) as lab:
        got = joiner.run_lab(1_000_000, repeats=1, idle_s=0.2, lab=lab)
    for direction in ("down", "up"):
        m = got["rounds"][direction]
        assert m["lone_s"] == pytest.approx(8e6 / 50e6, rel=0.3)
        assert [r[2] for r in m["rounds"]] == pytest.approx([r[0] for r in m["rounds"]], abs=0.05)
        assert got["fits"][direction]["boost"] >= 1.0
    assert list_namespaces() == []
