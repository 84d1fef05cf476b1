"""Busy shares: the two-way table corrected for training traffic (sgdsim.lab.busy).

Oracles: hand-checked table entries; the fit recovering the exact share from fluid traffic
that follows the model (workers cycling pull, compute, push, with the table's shares and the
busy share as the rates); invariance where the correction cannot act (2 workers never put 3
flows on the NIC); the hardware file's one-line errors.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sgdsim import predict
from sgdsim.analytic.two_way import BUSY_FLOWS, TwoWay, busy_share, rule_for, with_busy
from sgdsim.errors import ConfigError
from sgdsim.hardware import hardware_from_dict
from sgdsim.lab.busy import busy_shares
from sgdsim.parse.hardware import specs_from_hardware
from sgdsim.spec import TwoWayRule

SIDE = 6  # splits of up to 5 flows measured


def _table(seed=0):
    rng = np.random.default_rng(seed)
    t = [[[None] * SIDE for _ in range(SIDE)] for _ in range(2)]
    for d in range(2):
        for n in range(1, SIDE):
            for m in range(SIDE - n):
                t[d][n][m] = 1.0 if m == 0 else float(rng.uniform(0.3, 1.0))
    return t


def test_with_busy_replaces_exactly_the_splits_busy_both_ways_with_three_flows_or_more():
    t = _table()
    out = with_busy(t, (0.7, None))
    for n in range(1, SIDE):
        for m in range(SIDE - n):
            busy = m >= 1 and n + m >= BUSY_FLOWS
            assert out[0][n][m] == (0.7 if busy else t[0][n][m])
            assert out[1][n][m] == t[1][n][m]  # None: the push direction as measured
    assert out[0][1][1] == t[0][1][1] and out[0][4][0] == 1.0
    assert out[0][3][3] is None  # beyond the measured total stays a gap (the grid extrapolates)


@pytest.mark.parametrize("share", [0.0, 1.5, float("nan")])
def test_with_busy_refuses_shares_outside_zero_one(share):
    with pytest.raises(ConfigError, match="busy share"):
        with_busy(_table(), (share, None))


def _fluid(table, busy, gaps, size, rate, cycles, shape=0.0):
    """Workers cycling pull, gap, push, gap over one PS NIC; each direction moves
    rate·f(n, m) (``busy`` times f to the power ``shape`` where both directions carry flows,
    n + m >= 3) shared equally."""
    grid = TwoWay(table=with_busy(table, busy, shape)).grid(len(gaps) + 1)
    W = len(gaps)
    left = np.full(W, size, float)
    phase = np.zeros(W, int)  # 0 pull, 1 gap, 2 push, 3 gap
    wake = np.array(gaps, float) * np.arange(W) / W  # staggered first pulls
    phase[:] = 3
    start = np.zeros(W)
    done = [[], []]
    t, steps = 0.0, np.zeros(W, int)
    while True:
        draining = steps.min() >= cycles  # no new transfers; those under way end
        n = [(phase == 0).sum(), (phase == 2).sum()]
        if draining and not any(n):
            return done[0], done[1]
        speed = np.zeros(W)
        for d, ph in ((0, 0), (1, 2)):
            if n[d]:
                speed[phase == ph] = rate * grid[d][n[d], n[1 - d]] / n[d]
        moving = speed > 0
        dt_move = np.min(np.where(moving, left / np.where(moving, speed, 1), np.inf))
        dt_wake = np.inf if draining else np.min(np.where(~moving, wake - t, np.inf))
        dt = min(dt_move, dt_wake)
        left -= speed * dt
        t += dt
        for w in range(W):
            if moving[w] and left[w] <= size * 1e-12:
                done[phase[w] // 2].append((start[w], t))
                phase[w] += 1
                wake[w] = t + gaps[w]
                steps[w] += phase[w] == 3  # a push ended: one step done
            elif not moving[w] and wake[w] <= t and not draining:
                phase[w] = (phase[w] + 1) % 4
                left[w], start[w] = size, t


@pytest.mark.parametrize("gaps,busy", [((0.01, 0.02, 0.03, 0.05), (0.7, 0.8)),
                                       ((0.2, 0.0, 0.1), (0.55, 0.9)),
                                       ((0.05, 0.3, 0.01, 0.02, 0.04), (0.9, 0.6))])
def test_the_fit_recovers_the_busy_share_of_traffic_that_follows_the_model(gaps, busy):
    table, size, rate = _table(1), 1e6, 1e7
    runs = [_fluid(table, busy, gaps, size, rate, cycles=12)]
    got = busy_shares(runs, size, 8 * rate, table)
    assert got == pytest.approx(busy, rel=1e-6)


@pytest.mark.parametrize("shape", [0.4, 1.0])
def test_with_a_shape_busy_splits_keep_the_table_to_that_power_and_the_fit_recovers_the_share(shape):
    t = _table(1)
    out = with_busy(t, (0.7, 0.9), shape)
    for n in range(1, SIDE):
        for m in range(SIDE - n):
            busy = m >= 1 and n + m >= BUSY_FLOWS
            for d, c in enumerate((0.7, 0.9)):
                want = c * min(1.0, t[d][n][m]) ** shape if busy else t[d][n][m]
                assert out[d][n][m] == pytest.approx(want, rel=1e-15)
    assert with_busy(t, (0.7, 0.9), 0.0) == with_busy(t, (0.7, 0.9))  # shape 0: the flat shares
    gaps, size, rate = (0.01, 0.02, 0.03, 0.05), 1e6, 1e7
    runs = [_fluid(t, (0.7, 0.9), gaps, size, rate, cycles=12, shape=shape)]
    assert busy_shares(runs, size, 8 * rate, t, shape=shape) == pytest.approx((0.7, 0.9), rel=1e-6)
    flat = busy_shares(runs, size, 8 * rate, t)  # read as flat, the same bytes need lower shares
    assert flat[0] < 0.7 and flat[1] < 0.9


def test_the_fit_needs_runs_busy_both_ways_with_three_transfers():
    table = _table()
    two = [_fluid(table, (0.5, 0.5), (0.01, 0.02), 1e6, 1e7, cycles=5)]
    with pytest.raises(ConfigError, match="3 or more transfers at once"):
        busy_shares(two, 1e6, 8e7, table)


def test_with_busy_by_flow_count_gives_three_flows_their_share_and_the_last_share_holds_on():
    t = _table()
    out = with_busy(t, ((0.8, 0.7), (0.9,)))
    for n in range(1, SIDE):
        for m in range(1, SIDE - n):
            if n + m >= BUSY_FLOWS:
                assert out[0][n][m] == (0.8 if n + m == 3 else 0.7)
                assert out[1][n][m] == 0.9  # a list of one: one share for every count
    assert with_busy(t, ((0.6, 0.6), (0.6,))) == with_busy(t, (0.6, 0.6))
    assert busy_share((0.8, 0.7, 0.5), 9) == 0.5 and busy_share(0.4, 9) == 0.4


@pytest.mark.parametrize("share", [(), (0.8, 0.0), (0.8, float("nan")), ("0.8",), (True,)])
def test_with_busy_refuses_bad_shares_by_flow_count(share):
    with pytest.raises(ConfigError, match="busy share"):
        with_busy(_table(), (share, None))


def test_the_fit_recovers_shares_by_flow_count_from_runs_of_three_and_five_workers():
    """Three workers put at most 3 transfers on the NIC, five up to 5: together they tell the
    share at 3 from the one at 4 or more, in each direction, with a different size per run."""
    table, rate = _table(1), 1e7
    busy = ((0.85, 0.7), (0.9, 0.6))
    runs = [_fluid(table, busy, (0.02, 0.05, 0.01), 1e6, rate, cycles=12),
            _fluid(table, busy, (0.05, 0.3, 0.01, 0.02, 0.04), 2e6, rate, cycles=12)]
    got = busy_shares(runs, [1e6, 2e6], 8 * rate, table, flows=(3, 4))
    assert got[0] == pytest.approx(busy[0], rel=1e-6) and got[1] == pytest.approx(busy[1], rel=1e-6)
    one = busy_shares(runs, [1e6, 2e6], 8 * rate, table)  # one class: between the two
    assert all(lo < c < hi for c, (hi, lo) in zip(one, busy))
    with pytest.raises(ConfigError, match="4 or more transfers at once"):
        busy_shares(runs[:1], 1e6, 8 * rate, table, flows=(3, 4))  # 3 workers cannot tell them apart


@pytest.mark.parametrize("flows", [(4,), (3, 3), (2, 3), ()])
def test_bad_flow_classes_are_refused_in_one_line(flows):
    with pytest.raises(ConfigError, match="ascending flow counts starting at 3"):
        busy_shares([], 1e6, 8e7, _table(), flows=flows)


def _hardware(**extra):
    t = _table(2)
    return {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 0.0,
            "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0, "two_way_table": t, **extra}


def _cluster(hw, **given):
    return specs_from_hardware(hw, "ps", **given)[1]


def _table_for(cluster, ps_count):
    """The two-way table the models use with ``ps_count`` servers."""
    return rule_for(cluster.contention.two_way, ps_count).table


def test_the_hardware_file_applies_its_busy_shares_with_one_ps_and_round_trips():
    hw = hardware_from_dict(_hardware(two_way_busy=0.6, two_way_busy_push=0.75))
    cluster = _cluster(hw)
    t = _table_for(cluster, 1)
    assert t[0][2][1] == 0.6 and t[1][1][2] == 0.75 and t[0][1][1] == hw.two_way_table[0][1][1]
    assert _table_for(cluster, 2) == hw.two_way_table  # measured with one PS
    assert hardware_from_dict(json.loads(json.dumps(hw.to_dict()))) == hw
    by_count = hardware_from_dict(_hardware(two_way_busy=[0.8, 0.6], two_way_busy_push=0.75))
    t = _table_for(_cluster(by_count), 1)
    assert (t[0][2][1], t[0][3][1], t[0][2][2]) == (0.8, 0.6, 0.6) and t[1][1][2] == 0.75
    assert by_count.two_way_busy == (0.8, 0.6)
    assert hardware_from_dict(json.loads(json.dumps(by_count.to_dict()))) == by_count
    plain = _cluster(hardware_from_dict(_hardware()))
    assert _table_for(plain, 1) == plain.contention.two_way.table
    # an explicit two-way rule replaces the file's table, and its busy shares with it
    assert _table_for(_cluster(hw, two_way_penalty=0.1), 1) is None


def test_busy_shares_without_a_table_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="give the table too"):
        TwoWayRule(busy=(0.7, None))
    with pytest.raises(ConfigError, match="go together"):
        TwoWayRule(table=_table(), busy_shape=0.5)
    with pytest.raises(ConfigError, match="go together"):
        TwoWayRule(table=_table(), busy_shaped=(0.7, 0.7))
    with pytest.raises(ConfigError, match="two_way_busy_shape must be a number in \\[0, 1\\]"):
        TwoWayRule(table=_table(), busy_shaped=(0.7, 0.7), busy_shape=-0.1)


def test_the_simulator_takes_the_shaped_shares_and_the_coarse_model_the_flat_ones():
    hw = hardware_from_dict(_hardware(two_way_busy=0.6, two_way_busy_push=0.75, two_way_busy_shaped=0.7,
                                      two_way_busy_shaped_push=0.8, two_way_busy_shape=0.5))
    cluster, raw = _cluster(hw), hw.two_way_table
    coarse, fine = _table_for(cluster, 1), rule_for(cluster.contention.two_way, 1, shaped=True).table
    assert coarse[0][2][1] == 0.6 and coarse[1][1][2] == 0.75
    assert fine[0][2][1] == 0.7 * min(1.0, raw[0][2][1]) ** 0.5 and fine[1][1][2] == 0.8 * min(1.0, raw[1][1][2]) ** 0.5
    assert fine[0][1][1] == raw[0][1][1]  # two flows: as measured
    assert rule_for(cluster.contention.two_way, 2, shaped=True).table == raw  # one PS only
    assert hardware_from_dict(json.loads(json.dumps(hw.to_dict()))) == hw
    flat = hardware_from_dict(_hardware(two_way_busy=0.6, two_way_busy_push=0.75))
    assert rule_for(_cluster(flat).contention.two_way, 1, shaped=True).table == _table_for(_cluster(flat), 1)


@pytest.mark.parametrize("extra,match", [
    ({"two_way_busy": 0}, "'two_way_busy' must be in \\(0, 1\\]"),
    ({"two_way_busy_push": 1.2}, "'two_way_busy_push' must be in \\(0, 1\\]"),
    ({"two_way_busy": "0.7"}, "'two_way_busy' must be in \\(0, 1\\], or a list"),
    ({"two_way_busy": [0.8, None]}, "'two_way_busy' must be in \\(0, 1\\], or a list"),
    ({"two_way_busy": []}, "'two_way_busy' must be in"),
    ({"two_way_busy": 0.7, "two_way_table": None}, "has none"),
    ({"two_way_busy_shaped": 0.7, "two_way_busy_shape": 1.5}, "'two_way_busy_shape' must be in \\[0, 1\\]"),
    ({"two_way_busy_shape": 0.5}, "'two_way_busy_shape' and 'two_way_busy_shaped' go together"),
    ({"two_way_busy_shaped": 0.7}, "'two_way_busy_shape' and 'two_way_busy_shaped' go together"),
    ({"two_way_busy_shaped": 1.3, "two_way_busy_shape": 0.5}, "'two_way_busy_shaped' must be in \\(0, 1\\]"),
])
def test_bad_busy_fields_are_one_line_errors(extra, match):
    with pytest.raises(Exception, match=match) as err:
        hardware_from_dict(_hardware(**extra))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_two_workers_never_see_it_and_four_workers_slow_with_a_lower_share(model):
    kw = dict(coarse="size=10MB,fwd=5ms,bwd=5ms,batch=16", mode="async", arch="ps", model=model,
              **({"replications": 2, "steps": 40, "warmup": 5, "seed": 3} if model == "fine" else {}))
    out = {}
    for name, extra in (("none", {}), ("low", {"two_way_busy": 0.4, "two_way_busy_push": 0.4})):
        hw = hardware_from_dict(_hardware(**extra))
        out[name] = predict(workers=[2, 4], **hw.predict_kwargs("ps", "async"), **kw)
        out[name + "2ps"] = predict(workers=4, ps_count=2, **hw.predict_kwargs("ps", "async"), **kw)
    assert out["low"][0].throughput == out["none"][0].throughput
    assert out["low"][1].throughput < 0.9 * out["none"][1].throughput
    assert out["low2ps"][0].throughput == out["none2ps"][0].throughput  # one PS only


ROOT = Path(__file__).resolve().parents[1]


def _busy_script(*args):
    return subprocess.run([sys.executable, "examples/lab/busy.py", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


TRACED_200 = ",".join(f"docs/validation/regimes/traced200-{n}.json" for n in
                      ("cnn-nooverlap-w3", "mlp-nooverlap-w3", "cnn-nooverlap-w4", "w48"))


@pytest.mark.parametrize("traced,hardware,flows", [
    ("docs/validation/regimes/traced-w48.json", "hardware-lab-100mbps.json", "3"),
    (TRACED_200, "hardware-lab-200mbps.json", "3,4"),  # by flow count (finding 16)
])
def test_the_lab_files_busy_shares_come_from_the_committed_traces(traced, hardware, flows):
    pytest.importorskip("torch")  # the script sizes a transfer from the lab's model
    hw = json.loads((ROOT / "examples/grids" / hardware).read_text())
    shape = hw.get("two_way_busy_shape", 0.0)
    out = _busy_script(traced, f"examples/grids/{hardware}", "--flows", flows, "--shape", str(shape))
    assert out.returncode == 0, out.stderr
    pooled, shaped = out.stdout.strip().splitlines()[-2:]

    def shares(v):
        return "/".join(f"{x:.3f}" for x in (v if isinstance(v, list) else [v]))
    assert f"pulls {shares(hw['two_way_busy'])}, pushes {shares(hw['two_way_busy_push'])}" in pooled
    assert f"power {shape:g}: pulls {shares(hw['two_way_busy_shaped'])}, pushes {shares(hw['two_way_busy_shaped_push'])}" in shaped
    assert hw["measured"]["busy"]["traced"] == traced


def test_the_script_refuses_untraced_runs_in_one_line():
    out = _busy_script("docs/validation/regimes/runs.json", "examples/grids/hardware-lab-100mbps.json")
    assert out.returncode == 2 and "no traced runs" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("busy,match", [("x", "busy share must be in"), ((0.5, 0.5, 0.5), "a share or two"),
                                        (1.5, "in \\(0, 1\\]"), (float("nan"), "in \\(0, 1\\]")])
def test_predict_refuses_bad_busy_shares_in_one_line(busy, match):
    with pytest.raises(ConfigError, match=match):
        predict(coarse="size=10MB,fwd=5ms,bwd=5ms,batch=16", workers=4, model="coarse",
                two_way_table=_table(), two_way_busy=busy)


def test_one_busy_share_serves_both_directions():
    kw = dict(coarse="size=10MB,fwd=5ms,bwd=5ms,batch=16", workers=4, model="coarse", two_way_table=_table())
    assert predict(two_way_busy=0.6, **kw)[0].throughput == predict(two_way_busy=(0.6, 0.6), **kw)[0].throughput
    same = predict(two_way_busy=((0.6, 0.6), [0.6]), **kw)[0].throughput  # by flow count, all equal
    assert same == predict(two_way_busy=0.6, **kw)[0].throughput


@pytest.mark.parametrize("model", ["fine", "coarse"])
def test_a_higher_share_at_three_flows_speeds_three_workers_and_not_five_much(model):
    """Three workers see only the share at 3 flows; five mostly the one from 4 on."""
    kw = dict(coarse="size=10MB,fwd=5ms,bwd=5ms,batch=16", workers=[3, 5], model=model,
              two_way_table=_table(), **({"replications": 2, "steps": 60, "warmup": 5, "seed": 3}
                                         if model == "fine" else {}))
    flat = predict(two_way_busy=0.5, **kw)
    high3 = predict(two_way_busy=((0.9, 0.5), (0.9, 0.5)), **kw)
    gain3 = high3[0].throughput / flat[0].throughput
    gain5 = high3[1].throughput / flat[1].throughput
    assert gain3 > 1.1 and gain5 < gain3
