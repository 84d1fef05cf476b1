"""The join boost's onset delay: a late-comer shares equally for ``join_delay_s``, then boosts.

Oracles: hand-computed link timelines (the boost comes due, or a later arrival cancels it),
the two-worker timeline of tests/test_joiner.py with the delay, the engine against equal
sharing when the delay outlasts every overlap (a pending boost timer must never fire after
its flow left), the onset fit on synthetic ramps whose delay is known, and the hardware
file's and the grid's switches.
"""
import json

import numpy as np
import pytest

from conftest import chunks, cli_predictions, layered_profile, run_sim
from simcfg import simcfg
from sgdsim.errors import ConfigError
from sgdsim.hardware import hardware_from_dict
from sgdsim.lab.onset import joiner_shares, onset_delay, recorded_onset
from sgdsim.sim.flows import make_links
from sgdsim.sim.links import add_flow, advance, next_flow, next_time
from sgdsim.sim.sharing.fair import apply_due_boost
from sgdsim.validate.grid import parse_grid


def _links(delay_s, boost=2.0, after_s=0.3, W=3):
    return make_links(2, W, 0, np.full(2, 1.0), np.full(2, np.inf),
                      join=((boost, 1.0), (after_s, 0.0), (delay_s, 0.0)))


def test_the_joiner_shares_equally_until_its_boost_comes_due():
    # B = 1 byte/s. A: 1 byte from 0; B: 1 byte from 0.4 (A is old enough), due at 0.9.
    # 0.4-0.9 equal: A 0.6 -> 0.35, B -> 0.75. Then B 2/3, A 1/3: A ends 0.9 + 1.05 = 1.95,
    # B has 0.75 - 0.7 = 0.05 left, alone: 2.0 (the link never idles).
    LK = _links(0.5)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 0, 0.4)
    add_flow(LK, 0, 1, 1.0, 0.4, 1)
    assert LK.weight[1] == 1.0 and LK.boost_due[1] == pytest.approx(0.9)
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(0.4 + 2 * 0.6)  # equal so far
    advance(LK, 0, 0.9)
    assert apply_due_boost(LK, 0, 1, 2) and LK.weight[1] == 2.0 and LK.boost_due[1] == -1.0
    assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(1.95)


def test_a_transfer_joining_one_about_to_end_takes_nothing_from_it():
    # A has 0.1 left when B joins at 0.9: with the boost A would end at 0.9 + 0.3 = 1.2;
    # with a 0.5 s delay it ends at 0.9 + 0.2 = 1.1, as under equal sharing.
    for delay_s, end in ((0.0, 1.2), (0.5, 1.1)):
        LK = _links(delay_s)
        add_flow(LK, 0, 0, 1.0, 0.0, 0)
        advance(LK, 0, 0.9)
        add_flow(LK, 0, 1, 1.0, 0.9, 1)
        assert next_flow(LK, 0) == 0 and next_time(LK, 0) == pytest.approx(end)


def test_a_later_arrival_cancels_a_pending_boost():
    LK = _links(0.5)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 0, 0.4)
    add_flow(LK, 0, 1, 1.0, 0.4, 1)
    advance(LK, 0, 0.6)
    add_flow(LK, 0, 2, 1.0, 0.6, 2)  # B is 0.2 old: C gets no boost, and B's is cancelled
    assert list(LK.boost_due[:3]) == [-1.0, -1.0, -1.0]
    advance(LK, 0, 0.9)
    assert not apply_due_boost(LK, 0, 1, 3) and list(LK.weight[:3]) == [1.0, 1.0, 1.0]


# the two-worker oracle of tests/test_joiner.py: T = 1 s per transfer, c = 0.25 s
S, BPS, BATCH, C = 1e6, 1e6, 10, 0.25
PROFILE = layered_profile([S], [0.1], [0.15], overlap=False, batch=BATCH)
KW = dict(workers=2, Bps=BPS, mode="async", sharing="ps", start_point=(0.3,))


def test_the_first_overlap_of_two_async_workers_follows_the_hand_timeline():
    # B starts 0.675 s after A; A has 0.325 left. Equal for 0.2 s (A 0.225 left, B 0.9), then
    # weight 3: A ends 0.875 + 0.9 = 1.775, B has 0.9 - 0.675 = 0.225 left: 2.0. Without the
    # delay they end 25 ms apart (tests/test_joiner.py); with it, 225 ms.
    res = run_sim(PROFILE, steps=1, warmup=0, join_boost=3.0, join_after_s=0.05, join_delay_s=0.2, **KW)
    pulls = {c.worker: c.end for c in chunks(res) if c.op.startswith("down") and c.step == 0}
    assert pulls[0] == pytest.approx(1.775) and pulls[1] == pytest.approx(2.0)


def test_a_delay_longer_than_every_overlap_is_equal_sharing_and_zero_is_the_plain_boost():
    kw = dict(steps=30, warmup=5, timeline=False, **KW)
    equal = run_sim(PROFILE, **kw).throughput
    boosted = dict(join_boost=3.0, join_after_s=0.05)
    assert equal == pytest.approx(20 / 2.9, rel=1e-9)
    # the pending timers outlive their flows here: one that fired would re-join a finished pull
    assert run_sim(PROFILE, join_delay_s=10.0, **boosted, **kw).throughput == pytest.approx(equal, rel=1e-12)
    assert run_sim(PROFILE, join_delay_s=0.0, **boosted, **kw).throughput == pytest.approx(20 / 4.2, rel=1e-9)


@pytest.mark.parametrize("kw, match", [
    (dict(join_boost=2.0, join_delay_s=-0.1), "join-delay"),
    (dict(join_boost=2.0, join_delay_s=float("nan")), "join-delay"),
    (dict(join_boost=2.0, join_delay_s=(0.1, 0.1, 0.1)), "one value or two"),
    (dict(join_boost=2.0, join_delay_s=7200.0), "0 to 1h"),
])
def test_bad_delays_are_refused_at_the_boundary(kw, match):
    with pytest.raises(ConfigError, match=match):
        simcfg(bandwidth_bps=1e9, **kw)


# ----------------------------------------------------------------------------- the fit

def _ramp(delay_s, plateau, bin_s=0.05, n=20):
    """The mean share of each bin when the joiner has 0.5 until ``delay_s``, then ``plateau``."""
    edges = np.arange(n + 1) * bin_s
    before = np.clip(np.minimum(edges[1:], delay_s) - edges[:-1], 0.0, bin_s)
    return (0.5 * before + plateau * (bin_s - before)) / bin_s


@pytest.mark.parametrize("delay_s", [0.0, 0.05, 0.084, 0.12, 0.19])
def test_the_onset_fit_recovers_a_known_delay(delay_s):
    assert onset_delay(_ramp(delay_s, 0.62)) == pytest.approx(delay_s, abs=1e-12)
    # two runs stacked, one with a higher plateau: means pool bytes
    both = np.vstack([_ramp(delay_s, 0.6), _ramp(delay_s, 0.7)])
    assert onset_delay(both) == pytest.approx(delay_s, abs=1e-12)


def test_equal_sharing_has_no_onset_and_a_slow_start_below_half_counts_as_delay():
    assert onset_delay(_ramp(0.0, 0.51)) is None
    slow = _ramp(0.1, 0.6)
    slow[0] = 0.4  # the first 50 ms below an equal share: 0.1·0.05/0.1 = 50 ms more
    assert onset_delay(slow) == pytest.approx(0.15)


def test_no_advantage_in_the_window_is_recorded_as_a_lower_bound_and_a_short_run_is_refused():
    assert recorded_onset(_ramp(0.0, 0.5), window_s=0.8, settled_s=0.5) == (0.8, True)
    assert recorded_onset(_ramp(0.3, 0.6), window_s=0.8, settled_s=0.5) == (pytest.approx(0.3), False)
    short = _ramp(0.1, 0.6)
    short[12:] = np.nan  # every joiner ended after 0.6 s
    with pytest.raises(ConfigError, match="some bins have no transfer left"):
        onset_delay(short, window_s=0.8, settled_s=0.4)
    with pytest.raises(ConfigError, match="window"):
        onset_delay(_ramp(0.1, 0.6), window_s=0.5, settled_s=0.6)


def test_joiner_shares_read_the_incumbents_progress():
    # the incumbent moves 100 B/s alone; an arrival from 1.0 to 2.0 leaves it 40 B/s
    t = np.linspace(0.0, 3.0, 3001)
    done = 100.0 * t - 60.0 * np.clip(t - 1.0, 0.0, 1.0)
    shares = joiner_shares(np.column_stack([t, done]), [(1.0, 2.0)], 100.0, bin_s=0.1, span_s=1.5)
    assert shares[0, :10] == pytest.approx(np.full(10, 0.6)) and np.isnan(shares[0, 10:]).all()


# ----------------------------------------------------------------------------- the switches

BASE_HW = {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
           "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0, "share_cv": 0.3,
           "join_boost": 1.4, "join_after_s": 0.05, "join_delay_s": 0.08,
           "stall_prob": 0.5, "stall_mean_s": 0.1}


def test_a_measured_onset_makes_the_boosts_the_default_and_stalls_stay_opt_in():
    hw = hardware_from_dict(BASE_HW)
    default = hw.predict_kwargs("ps", "async")
    assert (default["join_boost"], default["join_delay"], default["share_cv"]) == ((1.4, 1.0), (0.08, 0.0), 0.3)
    assert "stall_prob" not in default
    assert hw.predict_kwargs("ps", "async", tcp_dynamics=True)["stall_prob"] == (0.5, 0.0)
    off = hw.predict_kwargs("ps", "async", tcp_dynamics=False)
    assert not {"join_boost", "share_cv", "stall_prob"} & set(off)
    for args in (("ps", "sync"), ("ps", "async", 2), ("ps", "async", 1, "fcfs")):
        assert "join_boost" not in hw.predict_kwargs(*args)
    # no mode is predict's default, async: the Python API gets what the CLI gets
    assert hw.predict_kwargs("ps") == hw.predict_kwargs("ps", None) == default
    assert not {"join_boost", "share_cv"} & set(hw.predict_kwargs("ps", "async", flow_capped=True))
    undelayed = hardware_from_dict({k: v for k, v in BASE_HW.items() if k != "join_delay_s"})
    assert "join_boost" not in undelayed.predict_kwargs("ps", "async")  # a boost alone locks workers
    assert undelayed.predict_kwargs("ps", "async", tcp_dynamics=True)["join_delay"] == (0.0, 0.0)
    with pytest.raises(Exception, match="join_delay_s"):
        hardware_from_dict({**BASE_HW, "join_delay_s": -1})


def test_evaluate_and_plan_take_a_files_late_comer_where_predict_does():
    import dataclasses

    from sgdsim.evaluate import Control, Strategy, sim_config
    from sgdsim.parse.hardware import specs_from_hardware
    from sgdsim.spec import LateComer
    hw = hardware_from_dict(BASE_HW)
    cluster = specs_from_hardware(hw, "ps")[1]
    want = hw.predict_kwargs("ps", "async")
    got = sim_config(Strategy(), cluster, Control()).late_comer
    assert (got.boost, got.after_s, got.delay_s, got.share_cv) == \
        (want["join_boost"], want["join_after"], want["join_delay"], want["share_cv"])
    for strategy in (Strategy(mode="sync"), Strategy(ps_count=2), Strategy(sharing="fcfs")):
        cfg = sim_config(strategy, cluster, Control()).late_comer
        assert (cfg.boost, cfg.share_cv) == ((1.0, 1.0), 0.0)
    capped_link = dataclasses.replace(cluster.link, flow_cap_Bps=5e7 / 8)
    capped = sim_config(Strategy(), dataclasses.replace(cluster, link=capped_link), Control())
    assert capped.late_comer.boost == (1.0, 1.0)
    explicit = dataclasses.replace(cluster.contention, late_comer=LateComer(boost=(2.0, 1.0)))
    mine = sim_config(Strategy(), dataclasses.replace(cluster, contention=explicit), Control()).late_comer
    assert (mine.boost, mine.delay_s, mine.share_cv) == ((2.0, 1.0), (0.0, 0.0), 0.0)  # explicit wins
    undelayed = {k: v for k, v in BASE_HW.items() if k != "join_delay_s"}
    assert specs_from_hardware(hardware_from_dict(undelayed), "ps")[1].contention.measured_late_comer is None


def test_a_grid_case_takes_the_default_or_a_boolean(tmp_path):
    (tmp_path / "hw.json").write_text(json.dumps(BASE_HW))
    case = {"name": "c", "model": "lab:mlp-10mb", "workers": "1,2", "hardware": "hw.json",
            "batch_size": 16, "bandwidth": "100Mbps"}
    grid = lambda **kw: parse_grid({"case": [{**case, **kw}]}, str(tmp_path / "g.toml")).cases[0]  # noqa: E731
    assert grid().network()["join_delay"] == (0.08, 0.0) and "stall_prob" not in grid().network()
    assert grid(tcp_dynamics=True).network()["stall_prob"] == (0.5, 0.0)
    assert "join_boost" not in grid(tcp_dynamics=False).network()
    with pytest.raises(ConfigError, match="tcp_dynamics"):
        grid(tcp_dynamics="yes")


def test_predict_with_a_lab_file_takes_its_onset_and_a_flow_cap_drops_the_dynamics(capsys):
    from sgdsim.cli import main
    lab = ["--hardware", "examples/grids/hardware-lab-100mbps.json", "--join-boost", "3,1"]
    default, delayed = cli_predictions(capsys, 2, lab, [*lab, "--join-delay", "1h"])
    assert default[0]["throughput"] != delayed[0]["throughput"]  # the file's onset was used
    args = ["predict", "examples/profiles/alexnet.json", "--workers", "2", "--replications", "1",
            "--steps", "5", "--quiet", "--hardware", "examples/grids/hardware-lab-100mbps.json"]
    assert main(args + ["--flow-cap", "50Mbps"]) == 0  # not an error about options not given
    assert main(args + ["--flow-cap", "50Mbps", "--join-boost", "2"]) == 2
    assert "--flow-cap" in capsys.readouterr().err


def test_predict_takes_the_delay_from_its_option(capsys):
    rates = cli_predictions(capsys, 2, ["--join-boost", "3,1", "--join-after", "1ms"],
                            ["--join-boost", "3,1", "--join-after", "1ms", "--join-delay", "1h"], [])
    thr = [r[0]["throughput"] for r in rates]
    assert thr[0] != thr[1] and thr[1] == thr[2]  # an onset never reached: equal shares


def test_the_python_api_and_the_cli_answer_alike_with_a_lab_file(capsys):
    """``predict_with(profile, hw.predict_kwargs("ps"))`` with no mode is predict's default,
    async PS, and takes the file's measured dynamics as ``sgdsim predict --hardware`` does
    (it once dropped them: 8.71 against the CLI's 8.47 examples/s here)."""
    from sgdsim.cli import main
    from sgdsim.hardware import load_hardware
    from sgdsim.predict import predict_with
    path = "examples/grids/hardware-lab-100mbps.json"
    assert main(["predict", "examples/profiles/alexnet.json", "--workers", "4", "--hardware", path,
                 "--replications", "1", "--steps", "10", "--quiet", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    run = {"replications": 1, "steps": 10}
    api = predict_with("examples/profiles/alexnet.json", {**load_hardware(path).predict_kwargs("ps"), **run},
                       workers=4)[0]
    plain = predict_with("examples/profiles/alexnet.json",
                         {**load_hardware(path).predict_kwargs("ps", tcp_dynamics=False), **run}, workers=4)[0]
    assert api.throughput == cli[0]["throughput"] != plain.throughput


def test_predict_takes_a_hardware_file_as_the_cli_does(capsys):
    """``predict(profile, hardware=FILE, **keywords)`` is ``sgdsim predict --hardware FILE``:
    the file's keywords for the strategy asked (sync PS takes no late-comer boost instead of
    refusing it), each keyword given overriding the file's; a bad file is one error."""
    import sgdsim
    from sgdsim.cli import main
    from sgdsim.errors import ProfileError
    from sgdsim.hardware import load_hardware
    path, prof = "examples/grids/hardware-lab-100mbps.json", "examples/profiles/alexnet.json"
    run = dict(workers=4, replications=1, steps=10)
    for extra, kw in (([], {}), (["--mode", "sync"], {"mode": "sync"}),
                      (["--bandwidth", "1Gbps"], {"bandwidth": "1Gbps"})):
        assert main(["predict", prof, "--workers", "4", "--hardware", path, "--replications", "1",
                     "--steps", "10", "--quiet", "--format", "json", *extra]) == 0
        cli = json.loads(capsys.readouterr().out)[0]["throughput"]
        assert sgdsim.predict(prof, hardware=path, **run, **kw)[0].throughput == cli
        assert sgdsim.predict(prof, hardware=load_hardware(path), **run, **kw)[0].throughput == cli
    with pytest.raises(ProfileError, match="hardware file"):
        sgdsim.predict(prof, hardware="no-such-file.json", **run)
    with pytest.raises(ConfigError, match="hardware="):
        sgdsim.predict(prof, hardware=3, **run)
    from sgdsim.spec import Cluster, Control, Job, Link, Strategy
    with pytest.raises(ConfigError, match="not a mix"):  # the specs are the whole description
        sgdsim.predict(Job.of(sgdsim.load_profile(prof)), Strategy(), Cluster(Link(1e8)), Control(),
                       hardware=path)
