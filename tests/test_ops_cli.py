"""The whole path of issue 11 through the CLI on a tiny model: measure its calls into a
database, estimate its profile from the database alone, predict from that profile."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")

from sgdsim.cli import main  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.profile.io import load_profile  # noqa: E402

MODEL = "zoo:mlp?width=32&depth=2&inputs=16&classes=4"


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    db = tmp_path_factory.mktemp("ops") / "ops.sqlite"
    assert main(["ops", "measure", "--model", MODEL, "--batch-size", "8", "--repeats", "2",
                 "--db", str(db), "--quiet"]) == 0
    return db


def test_exact_hits_rebuild_the_step_from_the_database(measured, tmp_path, capsys):
    out = tmp_path / "est.json"
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--db", measured,
                   "--target", "this-cpu", "-o", out], capsys)
    assert rc == 0, io.err
    assert "an allocator that keeps freed memory" in io.err + io.out  # what the rows rest on
    prof = load_profile(str(out))
    info = prof.extra["estimated"]
    assert info["time_fraction_measured"] == 1.0 and info["calls_by_source"] == {
        "measured": info["calls"]}
    with open_db(str(measured), create=False) as db:
        rows = {r.key[1:]: r for r in db.load()}
    from sgdsim.ops.collect import call_dtype
    from sgdsim.ops.graph import trace_model
    from sgdsim.ops.optypes import classify
    from sgdsim.ops.records import params_key

    step = trace_model(MODEL, 8)
    expected = 0.0
    for call in step.calls:  # the oracle: every forward call's row, forward plus backward; a
        op, params = classify(call)  # time too short to resolve is stored as its bound and
        r = rows[(op, params_key(params), call_dtype(call))]  # counts as half of it
        expected += r.fwd_s / (2 if r.fwd_bound else 1) + r.bwd_s / (2 if r.bwd_bound else 1)
    assert prof.mean_compute_s() == pytest.approx(expected, rel=1e-9)
    assert info["step_factor"] is None and "not scaled by the device's step factor" in io.err
    with open_db(str(measured), create=False) as db:
        (timed,) = db.load_steps()  # the step ops measure --model timed, and the calls' sum then
    factor = timed["step_s"] / timed["calls_s"]
    scaled_out = tmp_path / "scaled.json"
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--step-factor", "--db", measured,
                   "--target", "this-cpu", "-o", scaled_out], capsys)
    scaled = load_profile(str(scaled_out))
    assert rc == 0 and "the times are scaled by the device's step factor" in io.err
    assert scaled.extra["estimated"]["step_factor"]["factor"] == pytest.approx(factor)
    assert scaled.mean_compute_s() == pytest.approx(expected * factor, rel=1e-9)
    rc, io = _run(["predict", out, "--workers", "1,2", "--format", "json", "--quiet"], capsys)
    assert rc == 0 and [p["workers"] for p in json.loads(io.out)] == [1, 2]


def test_the_stored_step_is_timed_beside_its_calls_sum(measured, capsys):
    from sgdsim.ops.collect import this_device
    from sgdsim.ops.estimate import estimate_profile
    from sgdsim.ops.step_factor import profile_step_s

    device = this_device(1).name
    with open_db(str(measured), create=False) as db:
        (timed,) = db.load_steps(device, "float32")
        calls = estimate_profile(MODEL, 8, db, device, step_factor=False)
    assert timed["model"] == MODEL and timed["batch_size"] == 8
    assert timed["calls_s"] == pytest.approx(profile_step_s(calls), rel=1e-9)  # as its rows sum now
    assert 0.2 < timed["step_s"] / timed["calls_s"] < 20  # a step of these calls, not of another model
    rc, io = _run(["ops", "stats", "--db", measured], capsys)
    line = next(x for x in io.out.splitlines() if "zoo:mlp?width=32" in x)
    assert rc == 0 and f"{timed['step_s'] / timed['calls_s']:.3f}" in line.split()
    assert "float32" in line.split()  # its precision: float32's and autocast's factors differ


def test_without_a_timed_step_no_factor_is_asked_for_and_the_estimate_is_the_calls_sum(tmp_path, capsys):
    db, out = tmp_path / "n.sqlite", tmp_path / "est.json"
    rc, io = _run(["ops", "measure", "--model", MODEL, "--batch-size", 8, "--repeats", 2,
                   "--no-step", "--db", db, "--quiet"], capsys)
    assert rc == 0
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--step-factor", "--db", db,
                   "-o", out], capsys)
    assert rc == 2 and "--step-factor: no model step timed on" in io.err and io.err.count("\n") == 1
    assert "ops measure --model" in io.err and not out.exists()
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--step-factor", "--dtype", "bfloat16",
                   "--db", db, "-o", out], capsys)
    assert rc == 2 and "steps are timed in float32 or under autocast" in io.err and not out.exists()
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--db", db, "-o", out], capsys)
    assert rc == 0 and "step factor" not in io.err
    info = load_profile(str(out)).extra["estimated"]
    assert info["step_factor"] is None
    assert load_profile(str(out)).mean_compute_s() == pytest.approx(info["forward_s"] + info["backward_s"])


def test_estimating_needs_the_device_and_the_calls(measured, tmp_path, capsys):
    out = tmp_path / "est.json"
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--db", measured,
                   "--target", "a100", "-o", out], capsys)
    assert rc == 2 and "no device 'a100'" in io.err and io.err.count("\n") == 1
    rc, io = _run(["profile", MODEL, "--batch-size", 64, "--estimate", "--db", measured,
                   "-o", out], capsys)  # other shapes, no estimator trained: the roofline
    assert rc == 0 and "neither measured nor estimated" in io.err and "sgdsim ops train" in io.err
    out.unlink()
    rc, io = _run(["profile", MODEL, "--batch-size", 8, "--estimate", "--steps", 3,
                   "--db", measured, "-o", out], capsys)
    assert rc == 2 and "--steps applies to a measured profile" in io.err
    assert not out.exists()


def test_remeasuring_skips_known_calls_unless_asked(measured, capsys):
    with open_db(str(measured), create=False) as db:
        before = len(db.load())
    rc, io = _run(["ops", "measure", "--model", MODEL, "--batch-size", 8, "--repeats", 2,
                   "--db", measured], capsys)
    assert rc == 0 and "measuring 0 call(s)" in io.err
    with open_db(str(measured), create=False) as db:
        assert len(db.load()) == before


def test_measuring_leaves_the_process_floating_point_state_alone(tmp_path, capsys):
    import numpy as np

    tiny = np.nextafter(0.0, 1.0)  # a subnormal: flushed to 0 under flush-to-zero
    rc, _ = _run(["ops", "measure", "--grid", "relu", "--samples", 2, "--repeats", 2,
                  "--db", tmp_path / "r.sqlite", "--quiet"], capsys)
    assert rc == 0 and tiny * 1.0 > 0.0


@pytest.mark.parametrize("argv, message", [
    (["--grid", "conv2d", "--batch-size", 4], "--batch-size applies to --model"),
    (["--model", MODEL], "--model needs --batch-size"),
    (["--grid", "other"], "'other' has no sampled grid"),
    (["--grid", "conv3d"], "unknown operator type 'conv3d'"),
    (["--grid", "relu", "--repeats", 1], "--repeats must be in 2..1000"),
    (["--grid", "relu", "--no-step"], "--no-step applies to --model"),
])
def test_measure_refuses_bad_requests_in_one_line(argv, message, tmp_path, capsys):
    rc, io = _run(["ops", "measure", *argv, "--db", tmp_path / "x.sqlite"], capsys)
    assert rc == 2 and message in io.err and io.err.count("\n") == 1
