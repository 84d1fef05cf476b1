"""A lone transfer joined by one the other way (sim/sharing/fair.py, sgdsim.lab.joined;
docs/validation/regimes/, finding 9): hand timelines of the link and of two engine workers,
the step fit against known curves, and the refusals."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from conftest import chunks, layered_profile, run_sim
from sgdsim.cli import main
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.evaluate import sim_config
from sgdsim.hardware import hardware_from_dict, load_hardware
from sgdsim.lab.joined import fit_each, fit_joined, incumbent_shares
from sgdsim.parse.hardware import specs_from_hardware
from sgdsim.sim.config import NO_JOINED, SimConfig
from sgdsim.sim.flows import make_links
from sgdsim.sim.links import add_flow, advance, next_time
from sgdsim.sim.sharing.fair import joined_due, set_rate
from sgdsim.sim.simulate import JOINED_POOL, _joined
from sgdsim.spec import Cluster, Contention, Control, Link, Strategy, TwoWayRule
from simcfg import simcfg

ONES = tuple(tuple(tuple(1.0 for _ in range(3)) for _ in range(3)) for _ in range(2))


def _links(share=0.5, after_s=0.3, pulls=None):
    return make_links(2, 2, 0, np.full(2, 1.0), np.full(2, np.inf), two_way=np.array(ONES),
                      joined=[pulls or [(after_s, share)], [(0.0, 1.0)] * len(pulls or [0])])


@pytest.mark.parametrize("pull_first, end", [(True, 1.5), (False, 1.2)])
def test_a_pull_that_a_push_joins_drops_to_its_share_after_the_delay(pull_first, end):
    # B = 1 byte/s, a 1-byte pull. Pull at 0, push at 0.2: full rate until 0.5 (0.5 moved),
    # then half: 0.5 + 0.5 / 0.5 = 1.5. Push at 0, pull at 0.2: the pull joined the push,
    # not the other way round, and keeps the link: 1.2.
    LK = _links()
    first, second = ((0, 1.0), (1, 10.0)) if pull_first else ((1, 10.0), (0, 1.0))
    add_flow(LK, first[0], 0, first[1], 0.0, 0)
    advance(LK, second[0], 0.2)
    add_flow(LK, second[0], 1, second[1], 0.2, 1)
    assert next_time(LK, 0) == pytest.approx(1.0 if pull_first else 1.2)
    advance(LK, 0, 0.5)
    set_rate(LK, 0)  # the engine's timer does this at 0.5
    assert next_time(LK, 0) == pytest.approx(end)
    assert next_time(LK, 1) == pytest.approx(10.2 if pull_first else 10.0)  # the push keeps its rate


def test_the_share_ends_with_the_push_and_needs_one_flow_each_way():
    LK = _links(after_s=0.0)
    add_flow(LK, 0, 0, 1.0, 0.0, 0)
    advance(LK, 1, 0.2)
    add_flow(LK, 1, 1, 0.1, 0.2, 1)  # a push of 0.1 s: the pull runs at half meanwhile
    assert next_time(LK, 0) == pytest.approx(0.2 + 0.8 / 0.5)
    LK.n[1] = 0  # the push left (what remove_flow does to the count)
    advance(LK, 0, 0.3)
    set_rate(LK, 0)
    assert next_time(LK, 0) == pytest.approx(0.3 + 0.75)  # 0.2 + 0.05 moved: full rate again
    LK.n[1], LK.n[0] = 1, 2  # two pulls against one push: the table's (busy) entry, not this
    set_rate(LK, 0)
    assert LK.rate[0] == pytest.approx(0.5)


def test_each_join_draws_its_pair_by_the_arrivals_sequence_number():
    # a pool of two pulls' (after_s, share); pushes join at 0.25. Arrival 1 draws the second,
    # (0.125, 0.8): full rate to 0.375, then 0.625 / 0.8 more: 1.15625; arrival 4 draws the
    # first, (0.25, 0.5): full rate to 0.5, then 0.5 / 0.5: 1.5
    for (seq0, seq1), due, end in (((0, 1), 0.375, 1.15625), ((2, 4), 0.5, 1.5)):
        LK = _links(pulls=[(0.25, 0.5), (0.125, 0.8)])
        add_flow(LK, 0, 0, 1.0, 0.0, seq0)
        advance(LK, 1, 0.25)
        add_flow(LK, 1, 1, 10.0, 0.25, seq1)
        assert joined_due(LK, 0) == due
        advance(LK, 0, due)
        set_rate(LK, 0)
        assert next_time(LK, 0) == pytest.approx(end)


def test_the_pool_resamples_the_measured_pairs_and_keeps_a_direction_without_them():
    draws = (((0.2, 0.5), (0.4, 0.7), (0.6, 0.9)), ())
    flat = dict(bandwidth_bps=8e6, two_way_table=ONES, two_way_joined=(0.6, 1.0),
                two_way_joined_after_s=(0.4, 0.0), two_way_joined_draws=draws)
    cfg = simcfg(**flat, seed=3)
    pool = _joined(cfg, 1)
    assert pool.shape == (2, JOINED_POOL, 2) and (pool[1] == (0.0, 1.0)).all()
    counts = [int((pool[0] == p).all(axis=1).sum()) for p in draws[0]]
    n, third = JOINED_POOL, JOINED_POOL / 3
    assert sum(counts) == n and all(abs(c - third) < 4 * (n * 2 / 9) ** 0.5 for c in counts)
    other = _joined(simcfg(**flat, seed=4), 1)
    assert not np.array_equal(pool, other)  # another seed, another pool
    fixed = _joined(simcfg(**{**flat, "two_way_joined_draws": ((), ())}, seed=3), 1)
    assert fixed.tolist() == [[[0.4, 0.6]], [[0.0, 1.0]]]


# T = 1 s per transfer alone, 0.25 s of compute between pull and push
S, BPS = 1e6, 1e6
PROFILE = layered_profile([S], [0.1], [0.15], overlap=False, batch=10)
KW = dict(workers=2, Bps=BPS, mode="async", sharing="ps", two_way_table=ONES)


def _first_transfers(start_s, **kw):
    res = run_sim(PROFILE, steps=1, warmup=0, start_point=(start_s / 2.25,), **KW, **kw)
    return {(c.worker, c.op[:2]): c.end for c in chunks(res) if c.step == 0}


def test_two_engine_workers_follow_the_hand_timeline():
    # B pulls from 1.0; A's push joins at 1.25. B: full rate to 1.5 (0.5 moved), half to 2.25
    # (A's push ends: 0.875 moved), then A's next pull shares the link: 2.5. Equal shares: 2.0.
    joined = _first_transfers(1.0, two_way_joined=(0.5, 1.0), two_way_joined_after_s=(0.25, 0.0))
    plain = _first_transfers(1.0)
    assert joined[(1, "do")] == pytest.approx(2.5) and plain[(1, "do")] == pytest.approx(2.0)
    assert joined[(0, "up")] == pytest.approx(2.25) == plain[(0, "up")]
    # B pulls from 1.5, into A's running push: full rate to 2.25, then A's next pull shares
    # the link for B's last 0.25: 2.75, with or without the joined share
    late = _first_transfers(1.5, two_way_joined=(0.5, 1.0), two_way_joined_after_s=(0.25, 0.0))
    assert late[(1, "do")] == pytest.approx(2.75) == _first_transfers(1.5)[(1, "do")]


def test_one_measured_pair_is_the_fixed_step():
    draws = _first_transfers(1.0, two_way_joined_draws=(((0.25, 0.5),), ()))
    assert draws[(1, "do")] == pytest.approx(2.5)  # the hand timeline above
    kw = dict(steps=30, warmup=5, timeline=False, start_point=(0.45,), **KW)
    step = run_sim(PROFILE, two_way_joined=(0.6, 1.0), two_way_joined_after_s=0.3, **kw).throughput
    one = run_sim(PROFILE, two_way_joined_draws=(((0.3, 0.6),), ()), **kw).throughput
    assert one == step


def test_a_vanishing_delay_converges_to_none_and_an_endless_one_changes_nothing():
    kw = dict(steps=30, warmup=5, timeline=False, start_point=(0.45,), **KW)
    share = dict(two_way_joined=(0.6, 0.9))
    now = run_sim(PROFILE, two_way_joined_after_s=0.0, **share, **kw).throughput
    soon = run_sim(PROFILE, two_way_joined_after_s=1e-9, **share, **kw).throughput
    never = run_sim(PROFILE, two_way_joined_after_s=3000.0, **share, **kw).throughput
    plain = run_sim(PROFILE, **kw).throughput
    assert soon == pytest.approx(now, rel=1e-6) and now < plain
    assert never == pytest.approx(plain, rel=1e-12)


def _curve(after_s, share, table=0.98, bin_s=0.05, n=28):
    t = (np.arange(n) + 0.5) * bin_s
    return np.where(t < after_s, table, share)[None, :].repeat(3, axis=0)


@pytest.mark.parametrize("after_s, share", [(0.45, 0.63), (0.0, 0.91), (0.25, 0.87)])
def test_the_step_fit_recovers_a_known_step(after_s, share):
    got = fit_joined(_curve(after_s, share), 0.98)
    assert got == pytest.approx((after_s, share), abs=1e-9)


def test_incumbent_shares_read_the_progress_after_each_arrival():
    # an incumbent at 100 B/s that an arrival at 1.0 s slows to 60 B/s from 1.4 s
    t = np.arange(0.01, 4.0, 0.01)
    done = np.where(t < 1.4, 100 * t, 140 + 60 * (t - 1.4))
    shares = incumbent_shares([(0.0, np.column_stack([t, done]))], [(1.0, 2.5), (3.5, 3.6)], 100.0, 1.0)
    assert shares.shape == (1, 20)  # the second arrival is shorter than the span: left out
    assert shares[0, :8] == pytest.approx(1.0) and shares[0, 8:] == pytest.approx(0.6)
    assert fit_joined(shares, 1.0) == pytest.approx((0.4, 0.6))
    with pytest.raises(ConfigError, match="no arrival overlaps"):
        fit_joined(incumbent_shares([(0.0, np.column_stack([t, done]))], [(3.5, 3.6)], 100.0, 1.0), 1.0)


def test_fit_each_recovers_each_arrivals_step():
    rows = np.vstack([_curve(0.3, 0.5)[:1], _curve(0.6, 0.8)[:1], _curve(0.45, 0.63)[:1]])
    got = np.array(fit_each(rows, 0.98))
    assert got == pytest.approx(np.array([(0.3, 0.5), (0.6, 0.8), (0.45, 0.63)]), abs=1e-9)


@pytest.mark.parametrize("kw, match", [
    (dict(two_way_joined=1.5), "share in"),
    (dict(two_way_joined_draws=(((0.3, 1.2),), ())), "share in"),
    (dict(two_way_joined_draws=(((0.3, 0.5, 1.0),), ())), "pairs"),
    (dict(two_way_joined_draws=((0.3, 0.5),)), "pairs"),
    (dict(two_way_joined_draws=(((-0.1, 0.5),), ())), "0 to 1h"),
    (dict(two_way_joined=(0.5, 0.5, 0.5)), "one value or two"),
    (dict(two_way_joined=0.5, two_way_joined_after_s=-1.0), "0 to 1h"),
])
def test_bad_joined_shares_are_refused(kw, match):
    with pytest.raises(ConfigError, match=match):
        run_sim(PROFILE, **KW, **kw)


def test_the_joined_share_corrects_a_table_of_one_ps():
    with pytest.raises(ConfigError, match="give the table"):
        TwoWayRule(joined=(0.6, 1.0))
    cluster = Cluster(Link(1e8 / 8), Contention(two_way=TwoWayRule(table=ONES, joined=(0.6, 1.0),
                                                                   joined_after_s=0.4)))
    assert _joined_for(cluster, 1) == ((0.6, 1.0), (0.4, 0.4), ((), ()))
    assert _joined_for(cluster, 2) == NO_JOINED


def _joined_for(cluster, ps_count):
    """(shares, after_s, draws) of a lone flow joined by one the other way, as the simulator
    reads them with ``ps_count`` servers (none but with one)."""
    return SimConfig(Strategy(ps_count=ps_count), cluster).joined


# the table and the busy shares that correct it gone: the joined fields are then what is left
NO_TABLE = {"two_way_table": None, "two_way_busy": None, "two_way_busy_push": None, "two_way_busy_shaped": None,
            "two_way_busy_shaped_push": None, "two_way_busy_shape": None}


def test_a_hardware_file_carries_the_joined_share_to_the_models():
    hw = load_hardware("examples/grids/hardware-lab-200mbps.json")
    data = {**hw.to_dict(), "two_way_joined": 0.63, "two_way_joined_after_s": 0.45,
            "two_way_joined_draws": None}
    assert hw.predict_kwargs("ps")["two_way_joined"] == (hw.two_way_joined, 1.0)  # pulls only
    kw = hardware_from_dict(data).predict_kwargs("ps")
    assert kw["two_way_joined"] == (0.63, 1.0) and kw["two_way_joined_after"] == (0.45, 0.0)
    assert "two_way_joined" not in load_hardware("examples/grids/hardware-lab-100mbps.json").predict_kwargs("ps")
    cluster = specs_from_hardware(hardware_from_dict(data), "ps")[1]  # what plan and evaluate use
    assert _joined_for(cluster, 1) == ((0.63, 1.0), (0.45, 0.0), ((), ()))
    with pytest.raises(ProfileError, match="two_way_joined"):
        hardware_from_dict({**data, **NO_TABLE})
    with pytest.raises(ProfileError, match="in \\(0, 1\\]"):
        hardware_from_dict({**data, "two_way_joined": 0.0})
    assert dataclasses.replace(hw, two_way_joined=0.63).to_dict()["two_way_joined"] == 0.63


def test_a_hardware_file_carries_the_joined_draws_to_the_simulator():
    hw = load_hardware("examples/grids/hardware-lab-200mbps.json")
    data = {**hw.to_dict(), "two_way_joined_draws": [[0.3, 0.5], [0.6, 0.75]]}
    loaded = hardware_from_dict(data)
    assert hardware_from_dict(loaded.to_dict()) == loaded  # what incumbent.py record-joined writes
    kw = loaded.predict_kwargs("ps")
    assert kw["two_way_joined_draws"] == (((0.3, 0.5), (0.6, 0.75)), ())
    cluster = specs_from_hardware(loaded, "ps")[1]
    assert _joined_for(cluster, 1)[2] == (((0.3, 0.5), (0.6, 0.75)), ())
    assert sim_config(Strategy(), cluster, Control()).joined[2] == kw["two_way_joined_draws"]
    no_draws = {k: v for k, v in hw.to_dict().items() if not k.startswith("two_way_joined_draws")}
    assert "two_way_joined_draws" not in hardware_from_dict(no_draws).predict_kwargs("ps")
    for bad in ([], [[0.3]], [[0.3, 0.0]], [[-1, 0.5]], [["0.3", 0.5]], "0.3,0.5"):
        with pytest.raises(ProfileError, match="list of \\[after_s, share\\] pairs"):
            hardware_from_dict({**data, "two_way_joined_draws_push": bad})
    with pytest.raises(ProfileError, match="two_way_joined_draws"):
        hardware_from_dict({**data, **NO_TABLE,
                            "two_way_joined": None, "two_way_joined_after_s": None})


def test_the_200mbps_files_joined_share_comes_from_the_committed_rounds(tmp_path):
    """The lab file's fields are what record-joined writes from the raw runs they cite (finding 9)."""
    raw = "docs/validation/regimes/joined/200mbps"
    runs = [f"{raw}/{kind}-pull-{offset}.txt" for offset in ("0.15", "0.3") for kind in ("inc", "arr")]
    committed = "examples/grids/hardware-lab-200mbps.json"
    copy = tmp_path / "hw.json"
    copy.write_text(open(committed, encoding="utf-8").read(), encoding="utf-8")
    out = subprocess.run([sys.executable, "examples/lab/incumbent.py", "record-joined", str(copy), "pull",
                          "1.4", *runs], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    hw, again = load_hardware(committed), load_hardware(copy)
    assert f"for {hw.two_way_joined_after_s:.2f} s, then {hw.two_way_joined:.3f}" in out.stdout
    for name in ("two_way_joined", "two_way_joined_after_s", "two_way_joined_draws"):
        assert getattr(again, name) == getattr(hw, name), name
    assert len(hw.two_way_joined_draws) == 31 and hw.two_way_joined_draws_push is None


def test_a_two_way_penalty_replaces_the_files_joined_draws(capsys):
    # the draws correct the file's table: dropped with it, or the cluster would refuse them
    args = ["predict", "--coarse", "size=10MB,fwd=10ms,bwd=20ms,batch=16", "--workers", "2",
            "--model", "coarse", "--hardware", "examples/grids/hardware-lab-200mbps.json"]
    assert main(args + ["--two-way-penalty", "0.1"]) == 0
    assert "examples/s" in capsys.readouterr().out

