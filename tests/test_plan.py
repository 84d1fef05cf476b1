"""``sgdsim plan``: the objective's choices against brute force, the frontier and knee against
their definitions, the three objectives end to end, and one-line errors."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

import sgdsim
from sgdsim.analytic.coarse_profile import parse_coarse
from sgdsim.cli import main
from sgdsim.evaluate import Cluster, Control, Job, Serial, Strategy, evaluate
from sgdsim.plan.objective import RESOLUTION, Objective, PlanPoint, Prices, knee_of
from sgdsim.plan.search import PlanRequest, candidates, plan
from sgdsim.spec import Link, Nodes

RESNET = "examples/profiles/resnet50.json"
SMALL = "size=20MB,fwd=40ms,bwd=80ms,batch=32"
KEYS = {"arch", "mode", "workers", "ps_count", "bandwidth_bps", "throughput", "ci_low", "ci_high",
        "epoch_time_s", "cost_per_epoch", "bottleneck"}


def _pt(x, workers=1, ps=1, price=1.0, lo=None, hi=None, label=0):
    strat = Strategy(ps_count=ps, window_bytes=1e6 + label)  # label: distinct strategies
    return PlanPoint(strat, _cluster(1e9), workers, x,
                     x if lo is None else lo, x if hi is None else hi, "worker", "fine", 3600, Prices(price))


def _cluster(bandwidth_bps, **nodes):
    return Cluster(Link(bandwidth_bps / 8), nodes=Nodes(**nodes))


points = st.lists(st.builds(_pt, x=st.floats(1, 1e3), workers=st.integers(1, 64),
                            ps=st.integers(1, 3), price=st.floats(0.1, 10),
                            label=st.integers(0, 1000)), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(pts=points)
def test_frontier_is_exactly_the_undominated_points(pts):
    front = Objective.frontier(pts)

    def dominated(p):
        return any(q.epoch_time_s() <= p.epoch_time_s() and q.cost_per_epoch() <= p.cost_per_epoch()
                   and (q.epoch_time_s(), q.cost_per_epoch()) != (p.epoch_time_s(), p.cost_per_epoch())
                   for q in pts)

    undominated = {(p.epoch_time_s(), p.cost_per_epoch()) for p in pts if not dominated(p)}
    assert {(p.epoch_time_s(), p.cost_per_epoch()) for p in front} == undominated


@settings(max_examples=200, deadline=None)
@given(pts=points, target_s=st.floats(1, 5000), budget=st.floats(0.01, 100))
def test_choice_is_the_brute_force_optimum_or_tied_with_it(pts, target_s, budget):
    for obj, measure in ((Objective("target", target_epoch_time_s=target_s), PlanPoint.cost_per_epoch),
                         (Objective("budget", budget_per_epoch=budget), PlanPoint.epoch_time_s)):
        ok = [p for p in pts if obj.feasible(p)]
        win, ties = obj.choose(pts)
        if not ok:
            assert win is None and ties == []
            continue
        best = min(measure(p) for p in ok)
        assert obj.feasible(win)
        # never a false winner: the recommendation is within the resolution of the optimum
        assert measure(win) <= best * (1 + RESOLUTION) / (1 - RESOLUTION) * (1 + 1e-12)
        assert all(obj.feasible(p) for p in ties) and all(t is not win for t in ties)


def test_overlapping_intervals_are_a_tie_not_a_winner():
    a = _pt(100.0, lo=90, hi=110, label=1)
    b = _pt(104.0, lo=95, hi=113, label=2)  # faster, and as expensive within the intervals
    c = _pt(300.0, workers=8, lo=290, hi=310, label=3)  # 9 nodes at 3x the speed: dearer
    win, ties = Objective("target", target_epoch_time_s=1e4).choose([a, b, c])
    assert {id(win), *map(id, ties)} == {id(a), id(b)}
    assert win is b  # of equally cheap configurations, the faster


@settings(max_examples=200, deadline=None)
@given(xs=st.lists(st.floats(1, 1e4), min_size=2, max_size=20), rel=st.floats(0.01, 0.5))
def test_knee_matches_its_definition(xs, rel):
    curve = [_pt(x, workers=w + 1) for w, x in enumerate(xs)]
    k = knee_of(curve, rel)
    one = xs[0]

    def flat_after(i):
        return all((xs[j] - xs[i]) / (j - i) < rel * one for j in range(i + 1, len(xs)))

    expected = next((i + 1 for i in range(len(xs) - 1) if flat_after(i)), None)
    assert k["workers"] == expected


def test_candidates_and_their_errors():
    labels = [s.label for s in candidates(["async-ps", "sync-ps", "allreduce"], max_ps=3)]
    assert labels == ["async-ps", "async-ps/2", "async-ps/3", "sync-ps", "allreduce"]
    for names, msg in (([], "no candidate"), (["ring"], "unknown strategy")):
        with pytest.raises(sgdsim.ConfigError, match=msg):
            candidates(names)


def test_every_point_checked_equals_brute_force_over_the_simulator():
    """With as many finalists as points, the plan's choice is the fine optimum (or tied)."""
    job = Job.of(parse_coarse(SMALL))
    strategies = candidates(["sync-ps", "allreduce"])
    clusters = (_cluster(1e9), _cluster(10e9))
    prices = Prices(1.0, ps=1.5)  # a server node dearer than a worker's
    control = Control(steps_per_worker=20, replications=2)
    obj = Objective("target", target_epoch_time_s=60.0)
    req = PlanRequest(job, strategies, clusters, (1, 2, 3, 4), 10_000, obj, finalists=100,
                      control=control, prices=prices)
    result = plan(req, Serial())
    assert len(result.checked) == len(result.points) == 16
    brute = []
    for s in strategies:
        for c in clusters:
            brute += [PlanPoint.of(p, s, c, 10_000, prices)
                      for p in evaluate(job, s, c, [1, 2, 3, 4], "fine", control, Serial())]
    ok = [p for p in brute if obj.feasible(p)]
    best = min(p.cost_per_epoch() for p in ok)
    rec = result.recommended
    assert rec is not None and rec.model == "fine" and obj.feasible(rec)
    assert rec.cost_per_epoch() <= best * (1 + RESOLUTION) / (1 - RESOLUTION)


def _plan_json(capsys, *extra):
    rc = main(["plan", RESNET, "--dataset-size", "1.28M", "--workers", "1-16", "--format", "json",
               "--jobs", "1", *extra])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def test_plan_answers_the_three_objectives(capsys):
    front = _plan_json(capsys, "--bandwidth", "1Gbps", "--bandwidth", "10Gbps")
    assert front["recommended"] is None and front["frontier"] and set(front["knee"])
    for p in front["frontier"] + front["finalists"]:
        assert KEYS <= set(p)
    assert {p["bandwidth_bps"] for p in front["frontier"]} <= {1e9, 10e9}

    target = _plan_json(capsys, "--bandwidth", "1Gbps", "--target-epoch-time", "2h",
                        "--price-per-node-hour", "3", "--ps-price-per-node-hour", "0.5")
    rec = target["recommended"]
    assert rec["epoch_time_s"] <= 7200 and rec["model"] == "fine"
    nodes_price = rec["workers"] * 3 + rec["ps_count"] * 0.5
    assert rec["cost_per_epoch"] == pytest.approx(rec["epoch_time_s"] / 3600 * nodes_price)
    assert rec["epoch_time_s"] == pytest.approx(1.28e6 / rec["throughput"])

    budget = _plan_json(capsys, "--bandwidth", "1Gbps", "--budget-per-epoch", "8")
    assert budget["recommended"]["cost_per_epoch"] <= 8
    fastest_ok = min(p["epoch_time_s"] for p in budget["finalists"] if p["cost_per_epoch"] <= 8)
    assert budget["recommended"]["epoch_time_s"] <= fastest_ok * (1 + RESOLUTION) / (1 - RESOLUTION)


def test_an_unreachable_objective_says_what_is_reachable(capsys):
    rc = main(["plan", RESNET, "--dataset-size", "1.28M", "--workers", "1-4", "--bandwidth", "1Gbps",
               "--target-epoch-time", "30s", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and "No configuration meets the objective. The best achievable:" in out
    d = _plan_json(capsys, "--bandwidth", "1Gbps", "--target-epoch-time", "30s")
    assert d["recommended"] is None and d["best_achievable"]["epoch_time_s"] > 30
    assert d["best_achievable"]["epoch_time_s"] == min(p["epoch_time_s"] for p in d["finalists"])


@pytest.mark.parametrize("args, msg", [
    (["--price-per-node-hour", "-1"], "--price-per-node-hour must be a number from 0 to"),
    (["--strategies", ""], "no candidate strategies"),
    (["--strategies", "ring"], "unknown strategy 'ring'"),
    (["--target-epoch-time", "2 fortnights"], "unknown time unit"),
    (["--target-epoch-time", "0s"], "must be positive"),
    (["--budget-per-epoch", "nan"], "positive number"),
    (["--knee", "150%"], "--knee must be between"),
    (["--max-ps", "0"], "--max-ps must be from 1 to 16"),
    (["--max-ps", "100000"], "--max-ps must be from 1 to 16"),
    (["--finalists", "1000"], "--finalists must be from 1 to 100"),
    (["--workers", "1-100000"], "at most 2,000 worker counts"),
    (["--bandwidth", "10Gbs"], "unknown bandwidth unit"),
])
def test_bad_plan_input_is_one_line(capsys, args, msg):
    rc = main(["plan", RESNET, "--dataset-size", "1000", *args])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_dataset_size_and_plot_are_checked_before_work(capsys, tmp_path):
    for size in ("0", "-5", "lots", "1e400"):
        assert main(["plan", RESNET, "--dataset-size", size]) == 2
        assert "--dataset-size" in capsys.readouterr().err
    saved = tmp_path / "plan.png"
    saved.write_bytes(b"mine")
    assert main(["plan", RESNET, "--dataset-size", "1000", "--plot", str(saved)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err and saved.read_bytes() == b"mine"
    with pytest.raises(SystemExit) as e:  # argparse: the two objectives exclude each other
        main(["plan", RESNET, "--dataset-size", "1000", "--target-epoch-time", "1h",
              "--budget-per-epoch", "3"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_plot_is_written(tmp_path, capsys):
    out = tmp_path / "plan.png"
    rc = main(["plan", RESNET, "--dataset-size", "1.28M", "--workers", "1-4", "--strategies",
               "sync-ps,allreduce", "--target-epoch-time", "10h", "--plot", str(out), "--jobs", "1"])
    assert rc == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().err


def test_coarse_pass_is_the_coarse_model(capsys):
    d = _plan_json(capsys, "--bandwidth", "1Gbps", "--strategies", "async-ps", "--max-ps", "1")
    direct = sgdsim.predict(RESNET, workers="1-16", bandwidth="1Gbps", model="coarse")
    by_w = {p.workers: p.throughput for p in direct}
    coarse = [p for p in d["frontier"] if p["model"] == "coarse"]
    assert coarse and all(math.isclose(p["throughput"], by_w[p["workers"]], rel_tol=1e-12) for p in coarse)


def test_a_search_counts_only_domain_errors_as_infeasible(monkeypatch):
    """A strategy a model cannot honour is skipped with its reason; a bug stops the search."""
    job = Job.of(parse_coarse(SMALL))
    req = PlanRequest(job, candidates(["sync-ps"]), (_cluster(1e9),), (1, 2), 1000,
                      Objective("frontier"), control=Control(steps_per_worker=10, replications=1))

    def unsupported(*args, **kwargs):
        raise sgdsim.ConfigError("the coarse model cannot honour this")

    monkeypatch.setattr("sgdsim.plan.search.evaluate", unsupported)
    with pytest.raises(sgdsim.ConfigError, match="no candidate configuration is feasible"):
        plan(req, Serial())

    def bug(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("sgdsim.plan.search.evaluate", bug)
    with pytest.raises(ZeroDivisionError):
        plan(req, Serial())


def test_multi_gpu_nodes_are_priced_per_node_and_counts_fill_nodes():
    from sgdsim.plan.cli import whole_nodes

    cluster = _cluster(1e9, gpus_per_node=8, intra_bandwidth_Bps=150e9)
    for W, nodes in ((1, 1), (8, 1), (16, 2), (64, 8)):
        p = PlanPoint(Strategy(arch="allreduce", mode="sync"), cluster, W, 100.0, 100.0, 100.0,
                      "worker", "fine", 3600, Prices(5.0))
        assert p.worker_nodes == nodes and p.price_per_hour == nodes * 5.0
    assert whole_nodes(list(range(1, 21)), 8) == [1, 2, 3, 4, 5, 6, 7, 8, 16]
    assert whole_nodes([3, 5], 1) == [3, 5]
    with pytest.raises(sgdsim.errors.ConfigError, match="multiples of 8"):
        whole_nodes([9, 10], 8)


def test_plan_on_multi_gpu_nodes_end_to_end(capsys):
    out = _plan_json(capsys, "--bandwidth", "25Gbps", "--workers", "1-32", "--gpus-per-node", "8",
                     "--intra-bandwidth", "150GB/s", "--collective", "hierarchical",
                     "--bucket-size", "25MB", "--price-per-node-hour", "24",
                     "--target-epoch-time", "1h")
    rec = out["recommended"]
    for p in out["finalists"] + out["frontier"] + [rec]:
        assert p["workers"] <= 8 or p["workers"] % 8 == 0
        assert p["worker_nodes"] == math.ceil(p["workers"] / 8)
        price = p["worker_nodes"] * 24 + p["ps_count"] * 24
        assert p["cost_per_epoch"] == pytest.approx(p["epoch_time_s"] / 3600 * price)
