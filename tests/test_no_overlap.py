"""``--no-overlap`` (``overlap=False``): transfers wait for the step's compute on their side.
Oracles: a hand-computed timeline, and the PipeDream importer's own no-overlap DAGs (the
bundled ``*-nooverlap.json``), which the transform must give op for op and prediction for
prediction."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgdsim
from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.profile.io import load_profile
from sgdsim.profile.model import COMM, COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Job, Op, Profile
from sgdsim.profile.transforms import without_overlap

TWINS = ["resnet50", "alexnet", "vgg16", "inception_v3"]


def _two_layers(optimizer_after_push: bool = False) -> Profile:
    """Layers a and b of 1 MB each; forward 10 ms each, backward 20 ms each; batch 10."""
    ops = [Op("down:a", "a", "a", COMM, DOWNLINK, (), 0, 1e6), Op("down:b", "b", "b", COMM, DOWNLINK, (), 0, 1e6),
           Op("fwd:a", "a", "a", COMPUTE, WORKER, ("down:a",)),
           Op("fwd:b", "b", "b", COMPUTE, WORKER, ("down:b", "fwd:a")),
           Op("bwd:b", "b", "b", COMPUTE, WORKER, ("fwd:b",)),
           Op("bwd:a", "a", "a", COMPUTE, WORKER, ("bwd:b",)),
           Op("up:b", "b", "b", COMM, UPLINK, ("bwd:b",), 0, 1e6), Op("up:a", "a", "a", COMM, UPLINK, ("bwd:a",), 0, 1e6),
           Op("upd:b", "b", "b", COMPUTE, PS, ("up:b",)), Op("upd:a", "a", "a", COMPUTE, PS, ("up:a",))]
    durations = [0, 0, 0.010, 0.010, 0.020, 0.020, 0, 0, 0, 0]
    if optimizer_after_push:  # a worker-side step that applies the sums (an all-reduce job's)
        ops.append(Op("opt", "optimizer", "opt", COMPUTE, WORKER, ("up:a", "up:b")))
        durations.append(0.005)
    return Profile(Job("two", 10, overlap=True), tuple(ops), np.array([durations]))


def _acyclic(p: Profile) -> bool:
    deps = {op.id: set(op.deps) for op in p.ops}
    while deps:
        ready = [k for k, v in deps.items() if not v]
        if not ready:
            return False
        for k in ready:
            del deps[k]
        for v in deps.values():
            v.difference_update(ready)
    return True


def _ancestors(p: Profile, op_id: str) -> set[str]:
    by_id = {op.id: op for op in p.ops}
    seen, todo = set(), list(by_id[op_id].deps)
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(by_id[d].deps)
    return seen


def test_the_hand_computed_timeline():
    """One worker at 100 MB/s a direction. Overlapped: pulls 0-10 and 10-20 ms, forwards 10-20
    and 20-30, backward of b 30-50, its push 50-60 while a's backward runs 50-70, a's push
    70-80: a step of 80 ms. Serial: pulls 0-20, forwards 20-40, backwards 40-80, pushes 80-100."""
    p = _two_layers()
    kw = dict(workers=[1], bandwidth="800Mbps", mode="async", steps=20)
    assert sgdsim.predict(p, **kw)[0].step_time_s == pytest.approx(0.080, rel=1e-9)
    serial = sgdsim.predict(p, overlap=False, **kw)[0]
    assert serial.step_time_s == pytest.approx(0.100, rel=1e-9)
    assert serial.throughput == pytest.approx(10 / 0.100, rel=1e-9)


def test_a_worker_op_after_the_pushes_stays_after_them():
    """An optimizer step that applies the pushes' sums is not the step's compute: no cycle."""
    t = without_overlap(_two_layers(optimizer_after_push=True))
    assert _acyclic(t)
    by_id = {op.id: op for op in t.ops}
    assert by_id["up:a"].deps == by_id["up:b"].deps == ("bwd:a",)
    assert by_id["opt"].deps == ("up:a", "up:b")
    assert by_id["fwd:a"].deps == ("down:a", "down:b") and by_id["fwd:b"].deps == ("fwd:a",)


@pytest.mark.parametrize("model", TWINS)
def test_the_importers_no_overlap_dag_op_for_op(model):
    p = load_profile(f"examples/profiles/{model}.json")
    twin = load_profile(f"examples/profiles/{model}-nooverlap.json")
    t = without_overlap(p)
    assert [op.deps for op in t.ops] == [op.deps for op in twin.ops]
    assert t.job.overlap is False and t.extra["transforms"][-1]["transform"] == "no_overlap"
    assert [op.deps for op in without_overlap(t).ops] == [op.deps for op in t.ops]  # idempotent
    compute = {op.id for op in p.ops if op.resource == WORKER}
    for op in t.ops:
        if op.resource == UPLINK:  # every push after every compute op of the step
            assert compute <= _ancestors(t, op.id)


@pytest.mark.parametrize("kw", [dict(mode="async", bandwidth="1Gbps"), dict(mode="sync", bandwidth="1Gbps"),
                                dict(arch="allreduce", mode="sync", bandwidth="10Gbps", bucket_size="25MB")])
def test_predictions_equal_the_twins(kw):
    p = load_profile("examples/profiles/alexnet.json")
    twin = load_profile("examples/profiles/alexnet-nooverlap.json")
    for model, extra in (("fine", dict(replications=2, steps=20)), ("coarse", {})):
        got = sgdsim.predict(p, workers=[1, 2, 4], model=model, overlap=False, **extra, **kw)
        want = sgdsim.predict(twin, workers=[1, 2, 4], model=model, **extra, **kw)
        assert [x.throughput for x in got] == [x.throughput for x in want]
        assert [(x.ci_low, x.ci_high) for x in got] == [(x.ci_low, x.ci_high) for x in want]


def test_a_coarse_profile_loses_its_overlap_flag():
    on, off = "size=102MB,fwd=182ms,bwd=261ms,batch=128,overlap=1", "size=102MB,fwd=182ms,bwd=261ms,batch=128"
    got = sgdsim.predict(coarse=on, workers=[1, 4, 16], model="coarse", overlap=False, bandwidth="1Gbps")
    want = sgdsim.predict(coarse=off, workers=[1, 4, 16], model="coarse", bandwidth="1Gbps")
    assert [x.throughput for x in got] == [x.throughput for x in want]
    # one worker: the overlap saves the pushes' time (78.4 examples/s against 61.7)
    assert got[0].throughput < sgdsim.predict(coarse=on, workers=[1], model="coarse",
                                              bandwidth="1Gbps")[0].throughput


def test_the_cli_flag_is_the_keyword(capsys):
    args = ["examples/profiles/alexnet.json", "--workers", "2", "--replications", "1", "--steps", "10",
            "--quiet", "--format", "json"]
    assert main(["predict", *args, "--no-overlap"]) == 0
    cli = json.loads(capsys.readouterr().out)
    api = sgdsim.predict("examples/profiles/alexnet.json", workers=[2], replications=1, steps=10, overlap=False)
    assert cli[0]["throughput"] == api[0].throughput


@pytest.mark.parametrize("bad", ["no", 0, None, "False"])
def test_overlap_must_be_a_bool(bad):
    with pytest.raises(ConfigError, match="overlap must be True or False"):
        sgdsim.predict("examples/profiles/alexnet.json", workers=[1], overlap=bad)


def test_plan_serialises_every_candidate(capsys):
    """``plan --no-overlap`` on a profile answers what plan answers on its no-overlap twin."""
    base = ["--dataset-size", "100000", "--workers", "1-4", "--strategies", "allreduce,sync-ps",
            "--bandwidth", "1Gbps", "--finalists", "2", "--format", "json", "-q"]
    assert main(["plan", "examples/profiles/alexnet.json", *base, "--no-overlap"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(["plan", "examples/profiles/alexnet-nooverlap.json", *base]) == 0
    want = json.loads(capsys.readouterr().out)
    assert got["overlap"] is False and want["overlap"] is True  # the flag, not the profile's
    assert got["finalists"] == want["finalists"] and got["frontier"] == want["frontier"]


def test_calibrate_fits_the_serial_dag(tmp_path, capsys):
    """``calibrate --no-overlap`` on a profile writes the file calibrating its no-overlap twin
    writes, and that file then predicts the same with ``--no-overlap`` as the twin without."""
    out = []
    for name, flag in (("alexnet", ["--no-overlap"]), ("alexnet-nooverlap", [])):
        path = tmp_path / f"{name}.json"
        assert main(["calibrate", f"examples/profiles/{name}.json", "--step-time", "0.6s,0.62s",
                     "--hardware", "examples/grids/hardware-lab-100mbps.json", "-o", str(path), "-q",
                     *flag]) == 0
        out.append(json.loads(path.read_text()))
    capsys.readouterr()
    assert out[0] == out[1]
    kw = dict(workers=[2], replications=2, steps=10, hardware=str(tmp_path / "alexnet.json"))
    got = sgdsim.predict("examples/profiles/alexnet.json", overlap=False, **kw)[0].throughput
    assert got == sgdsim.predict("examples/profiles/alexnet-nooverlap.json", **kw)[0].throughput


def test_nodes_of_devices_serialise_before_they_aggregate():
    """With --gpus-per-node, PS nodes sum their devices' gradients first (TPDS §4.4): the
    devices' transfers wait for their step, then the node's."""
    kw = dict(workers=[4, 8], gpus_per_node=4, intra_bandwidth="12GB/s", bandwidth="10Gbps", mode="sync",
              replications=1, steps=10)
    got = sgdsim.predict("examples/profiles/alexnet.json", overlap=False, **kw)
    want = sgdsim.predict("examples/profiles/alexnet-nooverlap.json", **kw)
    assert [x.throughput for x in got] == [x.throughput for x in want]


@pytest.mark.parametrize("calibrated, predicted, warned", [
    (["--no-overlap"], [], "waited for the step's compute; this prediction overlaps them"),
    ([], ["--no-overlap"], "overlapped the step's compute; this prediction makes them wait"),
    (["--no-overlap"], ["--no-overlap"], None), ([], [], None)])
def test_a_calibration_of_the_other_schedule_is_said(tmp_path, capsys, calibrated, predicted, warned):
    path = tmp_path / "cal.json"
    assert main(["calibrate", "examples/profiles/alexnet.json", "--step-time", "0.6s", "--hardware",
                 "examples/grids/hardware-lab-100mbps.json", "-o", str(path), "-q", *calibrated]) == 0
    assert json.loads(path.read_text())["measured"]["calibration"]["overlap"] is (not calibrated)
    capsys.readouterr()
    assert main(["predict", "examples/profiles/alexnet.json", "--hardware", str(path), "--workers", "2",
                 "--replications", "1", "--steps", "10", *predicted]) == 0
    err = capsys.readouterr().err
    assert (warned in err) if warned else ("calibrated on a job" not in err)


def test_a_pilot_calibration_records_its_schedule_too():
    from sgdsim.calibrate_pilot import calibrate_pilot
    from sgdsim.hardware import load_hardware

    hw = load_hardware("examples/grids/hardware-lab-100mbps.json")
    runs = [(1, 50.0), (1, 51.0), (2, 80.0), (2, 82.0)]
    for name, overlap in (("alexnet", True), ("alexnet-nooverlap", False)):
        fit = calibrate_pilot(load_profile(f"examples/profiles/{name}.json"), runs, hw, "ps", "async")
        assert fit.hardware.measured["calibration"]["overlap"] is overlap


@st.composite
def _random_steps(draw):
    """A random step DAG in topological order: pulls, the step's compute (each on some pulls
    and earlier compute), pushes (each on some compute), then worker ops applying pushes."""
    n_pull, n_comp, n_push = draw(st.integers(0, 3)), draw(st.integers(1, 6)), draw(st.integers(0, 3))
    n_post = draw(st.integers(0, 2)) if n_push else 0
    ops: list[Op] = []

    def some(pool, at_least):
        return tuple(draw(st.lists(st.sampled_from(pool), min_size=at_least, max_size=len(pool), unique=True))) \
            if pool else ()
    for i in range(n_pull):
        ops.append(Op(f"down:{i}", "p", f"l{i}", COMM, DOWNLINK, (), 0, 1e6))
    for i in range(n_comp):
        pool = [o.id for o in ops]
        ops.append(Op(f"c:{i}", "c", f"c{i}", COMPUTE, WORKER, some(pool, 0)))
    computes = [o.id for o in ops if o.kind == COMPUTE]
    for i in range(n_push):
        ops.append(Op(f"up:{i}", "u", f"u{i}", COMM, UPLINK, some(computes, 1), 0, 1e6))
    pushes = [o.id for o in ops if o.resource == UPLINK]
    for i in range(n_post):
        ops.append(Op(f"opt:{i}", "o", f"o{i}", COMPUTE, WORKER, some(pushes, 1)))
    return Profile(Job("random", 4, overlap=True), tuple(ops), np.full((1, len(ops)), 0.01))


@settings(max_examples=200, deadline=None)
@given(_random_steps())
def test_any_step_serialises_without_a_cycle(p):
    t = without_overlap(p)
    assert _acyclic(t)
    by_id = {op.id: op for op in t.ops}
    step = {op.id for op in p.ops if op.resource == WORKER and not op.id.startswith("opt")}
    pulls = {op.id for op in p.ops if op.resource == DOWNLINK}
    for op in t.ops:
        anc = _ancestors(t, op.id)
        if op.resource == UPLINK:
            assert step <= anc  # after every compute op of the step
        elif op.id in step:
            assert pulls <= anc | {op.id}  # after every pull
        elif op.id.startswith("opt"):
            assert by_id[op.id].deps == next(o for o in p.ops if o.id == op.id).deps
    for op in p.ops:  # nothing is lost: every old dependency still holds, if only through others
        assert set(op.deps) <= _ancestors(t, op.id)
