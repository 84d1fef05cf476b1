"""The evaluation layer: the same answers through every front and executor; the W-independent
topology built once; the coarse models with several parameter servers; the progress line."""
from __future__ import annotations

import csv
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import sgdsim
import sgdsim.cli
from sgdsim.analytic.async_ps import async_ps_sweep
from sgdsim.analytic.coarse_profile import CoarseProfile, from_profile, to_profile
from sgdsim.analytic.sync import sync_ps
from sgdsim.errors import ConfigError
from sgdsim.evaluate import (Cluster, Control, Job, LocalPool, Serial, Strategy, evaluate,
                             make_executor)
from sgdsim.placement import ps_fractions
from sgdsim.parse.hardware import specs_from_hardware
from sgdsim.plan.objective import Prices
from sgdsim.sim import WorkerClass
from sgdsim.sim import plan as plan_mod
from sgdsim.spec import Link
from simcfg import simcfg

RESNET = "examples/profiles/resnet50.json"
FAST = Control(steps_per_worker=30, replications=2)


@pytest.fixture(scope="module")
def resnet():
    return sgdsim.load_profile(RESNET)


def _xs(points):
    return [(p.workers, p.model, p.throughput, p.ci_low, p.ci_high) for p in points]


def test_predict_is_a_front_of_evaluate(resnet):
    via_front = sgdsim.predict(resnet, workers="1,3", bandwidth="1Gbps", model="all",
                               steps=30, replications=2, executor=Serial())
    via_core = evaluate(Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8)), [1, 3], "all", FAST,
                        executor=Serial(), on_skip=lambda why: None)
    assert _xs(via_front) == _xs(via_core)
    assert {p.model for p in via_core} == {"fine", "coarse", "lin", "cynthia"}


def test_process_pool_and_dask_give_the_serial_answers(resnet):
    job, strat, cl = Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8))
    serial = evaluate(job, strat, cl, [1, 2, 4], "fine", FAST, executor=Serial())
    pooled = evaluate(job, strat, cl, [1, 2, 4], "fine", FAST, executor=LocalPool(2))
    assert _xs(pooled) == _xs(serial)
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster, Client(cluster) as client:
        from sgdsim.evaluate import DaskExecutor

        dasked = evaluate(job, strat, cl, [1, 2, 4], "fine", FAST, executor=DaskExecutor(client))
    assert _xs(dasked) == _xs(serial)


def test_a_sweep_runs_its_largest_points_first_and_answers_in_the_callers_order(resnet):
    """Largest first, so that a pool does not end on the biggest point alone; each point is
    what it is when simulated on its own."""
    from sgdsim.evaluate.core import evaluate_fine

    class Recording(Serial):
        def __init__(self):
            self.submitted = []

        def map(self, fn, items, progress=None):
            self.submitted = [t.workers for t in items]
            return super().map(fn, items, progress)

    job, strat, cl = Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8))
    rec = Recording()
    points = evaluate_fine(job, strat, cl, FAST, [2, 8, 1, 4], rec)
    assert rec.submitted == [8, 4, 2, 1]
    assert [p.workers for p in points] == [2, 8, 1, 4]
    for p in points:
        (alone,) = evaluate_fine(job, strat, cl, FAST, [p.workers], Serial())
        assert _xs([alone]) == _xs([p])


def test_executor_options_are_checked():
    for kwargs, msg in [(dict(jobs=0), "--jobs"), (dict(backend="dask"), "--scheduler"),
                        (dict(backend="ray"), "unknown --backend 'ray'"),
                        (dict(scheduler="tcp://x:1"), "--backend dask"),
                        (dict(backend="dask", jobs=2, scheduler="tcp://x:1"), "--jobs")]:
        with pytest.raises(ConfigError, match=msg):
            make_executor(**kwargs)


def test_a_simulator_bug_is_not_swallowed(resnet, monkeypatch):
    """Executors pass exceptions through unchanged: only a search decides what is infeasible."""
    def broken(task):
        raise RuntimeError("bug")

    monkeypatch.setattr("sgdsim.evaluate.core.run_fine", broken)
    with pytest.raises(RuntimeError, match="bug"):
        evaluate(Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8)), [2], "fine", FAST, executor=Serial())


def test_bad_combinations_fail_before_any_work(resnet):
    with pytest.raises(ConfigError, match="--arch allreduce runs --mode sync, not async"):
        evaluate(Job.of(resnet), Strategy(arch="allreduce", mode="async"), Cluster(Link(1e9 / 8)), [2], "coarse")
    with pytest.raises(ConfigError, match="cannot honour"):
        evaluate(Job.of(resnet), Strategy(order="tic"), Cluster(Link(1e9 / 8)), [2], "coarse")
    with pytest.raises(ConfigError, match="unknown model"):
        evaluate(Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8)), [2], "exact")
    with pytest.raises(ConfigError, match="price"):
        Prices(-1)


def test_the_topology_is_built_once_and_equals_a_fresh_build(resnet):
    config = simcfg(bandwidth_bps=1e9, order="tic")
    plan_mod._TOPOLOGY.clear()
    first = plan_mod.build_plan([WorkerClass("d", resnet, 3)], config)[0]
    assert len(plan_mod._TOPOLOGY) == 1
    copy = pickle.loads(pickle.dumps(resnet))  # what a process pool's worker sees
    again = plan_mod.build_plan([WorkerClass("d", copy, 7)], config)[0]
    assert len(plan_mod._TOPOLOGY) == 1
    plan_mod._TOPOLOGY.clear()
    fresh = plan_mod.build_plan([WorkerClass("d", copy, 7)], config)[0]
    for name in fresh._fields:
        np.testing.assert_array_equal(getattr(again, name), getattr(fresh, name), err_msg=name)
    assert first.W == 3 and again.W == 7


# --- coarse models with several parameter servers ------------------------------------------

coarse_profiles = st.builds(
    CoarseProfile, model_bytes=st.floats(1e5, 1e9), forward_s=st.floats(1e-3, 1.0),
    backward_s=st.floats(1e-3, 1.0), update_s=st.floats(0.0, 0.1), batch_size=st.integers(1, 256),
    overlap=st.booleans())


@settings(max_examples=40, deadline=None)
@given(c=coarse_profiles, P=st.integers(2, 4), sharing=st.sampled_from(["ps", "fcfs", "threshold"]))
def test_one_worker_does_not_care_how_many_servers(c, P, sharing):
    """A lone worker's NIC moves all M bytes either way: its cycle is the 1-PS cycle."""
    one = async_ps_sweep(c, 1e9 / 8, [1], sharing)[0]
    many = async_ps_sweep(c, 1e9 / 8, [1], sharing, fractions=(1 / P,) * P)[0]
    assert many.throughput == pytest.approx(one.throughput, rel=1e-9)


@pytest.mark.parametrize("P", [1, 2, 3])
def test_many_workers_saturate_the_busiest_server(P):
    """Asymptotic bound: X ≤ B/(8·M·max f) steps/s; MVA reaches it at large K."""
    c = CoarseProfile(model_bytes=10e6, forward_s=0.05, backward_s=0.05, update_s=0.0, batch_size=32)
    fractions = (0.5, 0.3, 0.2)[:P] if P > 1 else (1.0,)
    fractions = tuple(f / sum(fractions) for f in fractions)
    bound = 1e9 / (8 * 10e6 * max(fractions)) * 32
    x = async_ps_sweep(c, 1e9 / 8, [400], "ps", fractions=fractions)[0].throughput
    assert x == pytest.approx(bound, rel=0.01) and x <= bound * (1 + 1e-9)


@pytest.mark.parametrize("K", [1, 2, 4, 8])
def test_sync_with_several_servers_is_the_busiest_servers_load(K):
    c = CoarseProfile(model_bytes=10e6, forward_s=0.05, backward_s=0.07, update_s=0.01, batch_size=32)
    MB = 10e6 * 8 / 1e9
    T = sync_ps([(c, K)], 1e9 / 8, "ps", fractions=(0.5, 0.5)).step_time_s
    assert T == pytest.approx(2 * max(1, K / 2) * MB + 0.12 + 0.005, rel=1e-12)
    assert sync_ps([(c, K)], 1e9 / 8, "ps", fractions=(1.0,)).step_time_s == pytest.approx(
        2 * K * MB + 0.12 + 0.01, rel=1e-12)


def test_server_shares_follow_the_simulators_placement(resnet):
    for P in (1, 2, 3, 5):
        owner = plan_mod.assign_ps(resnet, P)
        sizes = np.array([op.size_bytes if op.resource == "downlink" else 0.0 for op in resnet.ops])
        expected = [sizes[owner == p].sum() / sizes.sum() for p in range(P)]
        assert ps_fractions(resnet, P) == pytest.approx(expected, rel=1e-12)


def test_coarse_two_servers_against_the_lab(tmp_path):
    """The lab's 2-PS runs (docs/validation/2ps/, 3 runs of 60 s per point): the coarse model
    with the servers' byte shares is within 5 % at W = 2, 4, 8; one server would be 10 % low."""
    out = tmp_path / "v"
    rc = sgdsim.cli.main(["validate", "examples/grids/lab-2ps.toml", "-o", str(out), "--models",
                          "coarse", "--measured", "docs/validation/2ps/points.csv"])
    assert rc == 0
    rows = [r for r in csv.DictReader(open(out / "points.csv")) if not r["fitted"]]
    assert sorted(int(r["workers"]) for r in rows) == [2, 4, 8]
    for r in rows:
        assert abs(float(r["error_pct"])) < 5.0, r
    prof = sgdsim.load_profile("docs/validation/2ps/profiles/mlp10-async-2ps.json")
    one_ps = evaluate(Job.of(prof), Strategy(ps_count=1), Cluster(Link(100e6 / 8)), [8], "coarse")[0]
    measured_w8 = next(float(r["measured"]) for r in rows if r["workers"] == "8")
    assert one_ps.throughput < 0.92 * measured_w8  # one server: its saturated NIC, -10 %


def test_coarse_profiles_split_evenly_over_servers():
    c = CoarseProfile(model_bytes=12e6, forward_s=0.1, backward_s=0.1, update_s=0.0, batch_size=8,
                      messages=6)
    assert ps_fractions(to_profile(c), 3) == pytest.approx((1 / 3,) * 3)
    assert from_profile(to_profile(c)).model_bytes == pytest.approx(12e6)


def test_strategy_labels_and_defaults():
    assert Strategy().label == "async-ps" and Strategy(ps_count=2).label == "async-ps/2"
    assert Strategy(mode="sync").fine_sharing == "hybrid"
    assert Strategy(arch="allreduce", mode="sync").label == "allreduce"
    assert replace(Strategy(), sharing="threshold").fine_sharing == "ps"


def test_a_hardware_file_means_the_same_to_both_fronts(resnet):
    """predict(**hw.predict_kwargs) and evaluate(specs_from_hardware) agree."""
    from sgdsim.hardware import load_hardware

    hw = load_hardware("examples/grids/hardware-lab-200mbps.json")
    for arch, mode in (("ps", "async"), ("ps", "sync"), ("allreduce", "sync")):
        front = sgdsim.predict(resnet, workers="2,4", mode=mode, arch=arch, model="coarse", hardware=hw)
        strategy, cluster, _ = specs_from_hardware(hw, arch, mode=mode)
        core = evaluate(Job.of(resnet), strategy, cluster, [2, 4], "coarse")
        assert _xs(front) == _xs(core)
    hw100 = load_hardware("examples/grids/hardware-lab-100mbps.json")
    assert specs_from_hardware(hw100, "allreduce")[1].link.step_latency_s == hw100.ring_latency_s > 0
    assert specs_from_hardware(hw100, "ps")[1].link.step_latency_s == 0
    assert specs_from_hardware(hw, "ps", two_way_penalty=0.1)[1].contention.two_way.table is None


def test_a_coarse_sweep_shows_a_spinner_naming_it_on_a_terminal(resnet, monkeypatch):
    """The coarse two-way fixed point over a long sweep can take minutes: on a terminal a
    spinner with the elapsed time says which model is working (here shown at once)."""
    import io
    import sgdsim.evaluate.core as core
    from sgdsim import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out, seen = Terminal(), []
    real = core.status

    def shown_at_once(text, stream=None, quiet_s=2.0):
        seen.append(text)
        return real(text, out, 0.0)

    import time
    slow = core.evaluate_analytic

    def a_long_fixed_point(*args, **kwargs):
        time.sleep(0.3)  # (the spinner's first frame comes from its own thread)
        return slow(*args, **kwargs)

    monkeypatch.setattr(core, "status", shown_at_once)
    monkeypatch.setattr(core, "evaluate_analytic", a_long_fixed_point)
    progress.configure(False)
    points = evaluate(Job.of(resnet), Strategy(), Cluster(Link(1e9 / 8)), [1, 2, 4], "coarse")
    assert [p.workers for p in points] == [1, 2, 4]
    assert seen == ["coarse model (3 worker counts)"]
    assert "coarse model (3 worker counts)" in out.getvalue()
