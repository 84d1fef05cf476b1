"""Real training in the lab (``sgdsim lab run``): PS async/sync, all-reduce, the 1-worker oracle.

Tests that bring up a lab need root, iproute2 and torch (else skipped), and refuse to run while
any ``sgdsim-*`` namespace exists, so a lab someone is using is never touched. The lab runs
use ``lab:mlp-2mb`` at 50 Mbit/s: ~0.7 s per 1-worker step, so a few seconds give enough steps.
"""
from __future__ import annotations

import json
import math
import os
import shutil

import pytest

torch = pytest.importorskip("torch")

from sgdsim.errors import ConfigError, SgdsimError  # noqa: E402
from sgdsim.lab.cluster import LabCluster, list_namespaces  # noqa: E402
from sgdsim.lab.train import LAB_MODELS, TrainResult, profile_lab_model, run_training  # noqa: E402
from sgdsim.lab.train.models import load_workload, param_layers  # noqa: E402
from sgdsim.profile.io import load_profile  # noqa: E402

CUSTOM = os.path.join(os.path.dirname(__file__), "..", "examples", "models", "custom_model.py")
MODEL, BATCH, BW = "lab:mlp-2mb", 16, 50e6

needs_lab = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("ip")
    or not shutil.which("tc"), reason="the lab needs root and iproute2 (ip, tc)")


def _no_foreign_lab():
    if list_namespaces():
        pytest.skip(f"sgdsim- namespaces exist ({', '.join(list_namespaces())}); not touching them")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One 3-host lab at 50 Mbit/s for the module, recorded in its own state file."""
    _no_foreign_lab()
    state = str(tmp_path_factory.mktemp("lab") / "lab.json")
    old = os.environ.get("SGDSIM_LAB_STATE")
    os.environ["SGDSIM_LAB_STATE"] = state  # so that 'sgdsim lab run' finds (and reuses) it
    try:
        with LabCluster(3, BW, state_file=state) as up:
            yield up
    finally:
        if old is None:
            os.environ.pop("SGDSIM_LAB_STATE")
        else:
            os.environ["SGDSIM_LAB_STATE"] = old
    assert list_namespaces() == []


# ----------------------------------------------------------------------------- no lab needed

def test_builtin_models_have_their_size():
    for name, size_mb in (("lab:mlp-10mb", 10), ("lab:mlp-20mb", 20), ("lab:mlp-40mb", 40),
                          (MODEL, 2)):
        params, owners = param_layers(load_workload(name, 4).model)
        assert sum(p.numel() * 4 for p in params) == pytest.approx(size_mb * 1e6, rel=0.1)
        assert owners[0] == "fc1" and owners[-1] == "fc4"
    assert "lab:cnn-small" in LAB_MODELS


@pytest.mark.parametrize("name,size_mb", [("lab:cnn-10mb", 10), ("lab:widecnn-35mb", 35)])
def test_cnn_models_have_their_size_and_learn_on_images(name, size_mb):
    work = load_workload(name, 4)
    params, owners = param_layers(work.model)
    assert sum(p.numel() * 4 for p in params) == pytest.approx(size_mb * 1e6, rel=0.01)
    assert owners[0] == "conv1" and owners[-1] == "fc2"
    inputs, target = work.batch_fn(0)
    assert inputs.shape == (4, 3, 32, 32) and torch.isfinite(work.loss(0))


@pytest.mark.parametrize("bad", ["lab:cnn-1mb", "lab:cnn-401mb", "lab:widecnn-mb", "lab:cnnx-10mb"])
def test_bad_cnn_specs_are_one_line_errors(bad):
    with pytest.raises(ConfigError, match="unknown lab model"):
        load_workload(bad, 4)


def test_custom_model_spec_is_resized_to_the_batch():
    work = load_workload(f"{CUSTOM}:build_fixed", 12)
    inputs, target = work.batch_fn(0)
    assert inputs.shape[0] == 12 and target.shape[0] == 12
    assert torch.isfinite(work.loss(0))


def test_profile_lab_model_is_a_chain_with_sizes():
    prof = profile_lab_model(MODEL, BATCH, overlap=True, steps=3)
    params, _ = param_layers(load_workload(MODEL, BATCH).model)
    assert prof.model_bytes() == sum(p.numel() * 4 for p in params)
    ids = [op.id for op in prof.ops]
    assert ids[:4] == ["down:fc1", "down:fc2", "down:fc3", "down:fc4"]
    assert "up:fc1" in ids and "upd:fc4" in ids and "bwd:relu1" in ids
    deps = {op.id: op.deps for op in prof.ops}
    assert deps["fwd:fc2"] == ("down:fc2", "fwd:relu1") and deps["up:fc3"] == ("bwd:fc3",)
    no = {op.id: op.deps for op in profile_lab_model(MODEL, BATCH, overlap=False, steps=1).ops}
    assert no["up:fc4"] == ("bwd:fc1",) and len(no["fwd:fc1"]) == 4
    assert prof.n_steps == 3 and prof.mean_compute_s() > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "lab:nope"}, "unknown lab model"),
    ({"model": "missing.py:build"}, "no such file"),
    ({"model": f"{CUSTOM}:nothere"}, "no function 'nothere'"),
    ({"arch": "allreduce", "mode": "async"}, "synchronous"),
    ({"workers": 0}, "positive integer"),
    ({"duration_s": "2s", "warmup_s": "5s"}, "longer than the warm-up"),
    ({"bandwidth_bps": "10furlongs"}, "unknown bandwidth unit"),
    ({"workers": 2, "record_profile": "x.json"}, "records one worker"),
    ({"mode": "sync", "stagger_s": "0.5s"}, "async parameter-server"),
    ({"stagger_s": "2min"}, "from 0 to 60 s"),
    ({"stagger_s": "soon"}, "cannot parse duration"),
])
def test_bad_input_is_one_line_before_any_lab(kwargs, message):
    from sgdsim.lab.train.runner import check_config

    args = {"model": MODEL, "workers": 1, "batch_size": BATCH, "bandwidth_bps": BW,
            "arch": "ps", "mode": "async", "overlap": False, "duration_s": 5, "warmup_s": 1,
            "record_profile": None, **kwargs}
    with pytest.raises(ConfigError, match=message) as info:
        check_config(**args)
    assert "\n" not in str(info.value)


def test_the_torch_trainer_takes_a_start_stagger():
    from sgdsim.lab.train.runner import check_config

    cfg = check_config(MODEL, 2, BATCH, BW, "ps", "async", False, 5, 1, None, 1, "0.5s", "torch")
    assert cfg.stagger_s == pytest.approx(0.5) and cfg.trainer == "torch"
    with pytest.raises(ConfigError, match="async parameter-server"):
        check_config(MODEL, 2, BATCH, BW, "ps", "sync", False, 5, 1, None, 1, "0.5s", "torch")


def test_a_stagger_starts_worker_r_r_times_later():
    from sgdsim.lab.train.runner import check_config

    cfg = check_config(MODEL, 2, BATCH, BW, "ps", "async", False, 5, 1, None, stagger_s="0.6s")
    assert cfg.stagger_s == pytest.approx(0.6)
    assert check_config(MODEL, 2, BATCH, BW, "ps", "async", False, 5, 1, None).stagger_s == 0.0


# ----------------------------------------------------------------------------- in the lab

@needs_lab
def test_smoke_two_workers_own_lab(tmp_path, monkeypatch):
    """The issue's smoke test: both hosts train, and the lab is gone afterwards."""
    _no_foreign_lab()
    monkeypatch.setenv("SGDSIM_LAB_STATE", str(tmp_path / "lab.json"))
    r = run_training(MODEL, 2, BATCH, "50Mbps", duration_s=8, warmup_s=2)
    assert isinstance(r, TrainResult) and r.workers == 2 and r.window_s == 6
    assert len(r.steps) == 2 and min(r.steps) > 0 and r.throughput > 0
    assert list_namespaces() == [] and not (tmp_path / "lab.json").exists()


@needs_lab
def test_async_and_sync_ps_both_train(lab):
    res = {m: run_training(MODEL, 2, BATCH, BW, mode=m, duration_s=5, warmup_s=1, lab=lab)
           for m in ("async", "sync")}
    for r in res.values():
        assert r.throughput > 0 and min(r.steps) > 0 and r.param_change > 0
    # the barrier keeps the two within a step of each other at any time, so the counts in a
    # window differ by at most 2
    assert abs(res["sync"].steps[0] - res["sync"].steps[1]) <= 2
    # (no async > sync here: two async workers may fall into step and then run like sync ones)
    assert list_namespaces() == ["sgdsim-h0", "sgdsim-h1", "sgdsim-h2", "sgdsim-sw"]  # reused


@needs_lab
def test_allreduce_two_workers_trains(lab):
    r = run_training(MODEL, 2, BATCH, BW, arch="allreduce", mode="sync", duration_s=5,
                     warmup_s=1, lab=lab)
    assert r.arch == "allreduce" and min(r.steps) > 0 and r.throughput > 0
    assert math.isfinite(r.loss_last) and r.param_change is None


@needs_lab
@pytest.mark.lab
def test_one_worker_ps_matches_the_no_overlap_oracle(lab):
    """batch / (2·M·8/B + compute): download, compute, upload, one after the other."""
    prof = profile_lab_model(MODEL, BATCH, overlap=False, steps=10)
    compute = prof.mean_compute_s() + prof.mean_compute_s("ps")
    oracle = BATCH / (2 * prof.model_bytes() * 8 / BW + compute)
    r = run_training(MODEL, 1, BATCH, BW, duration_s=9, warmup_s=2, lab=lab)
    assert r.throughput == pytest.approx(oracle, rel=0.3)


@needs_lab
@pytest.mark.lab
def test_two_parameter_servers_share_the_model_and_the_workers_nic(lab):
    """One worker, two PS: it pulls from both at once through its own NIC, so the transfers
    still take 2·M·8/B in all; each server holds about half the bytes."""
    prof = profile_lab_model(MODEL, BATCH, overlap=False, steps=10)
    compute = prof.mean_compute_s() + prof.mean_compute_s("ps")
    oracle = BATCH / (2 * prof.model_bytes() * 8 / BW + compute)
    r = run_training(MODEL, 1, BATCH, BW, duration_s=9, warmup_s=2, lab=lab, ps_count=2)
    assert r.ps_count == 2 and min(r.steps) > 0 and r.param_change > 0
    assert r.throughput == pytest.approx(oracle, rel=0.3)


def test_lab_shards_layers_exactly_as_the_simulator_places_them():
    from sgdsim.lab.train.models import shard_of
    from sgdsim.sim.plan import assign_ps

    prof = profile_lab_model("lab:cnn-10mb", 4, overlap=False, steps=2)
    params, owners = param_layers(load_workload("lab:cnn-10mb", 4, 0).model)
    for M in (2, 3):
        lab = dict(zip(owners, shard_of(params, owners, M)))
        sim = {op.layer: int(p) for op, p in zip(prof.ops, assign_ps(prof, M))
               if op.resource == "downlink"}
        assert lab == sim and len(set(lab.values())) == M


def test_two_ps_options_fail_before_any_lab():
    with pytest.raises(ConfigError, match="ps-count"):
        run_training(MODEL, 1, BATCH, BW, arch="allreduce", mode="sync", ps_count=2)
    with pytest.raises(ConfigError, match="ps count"):
        run_training(MODEL, 1, BATCH, BW, ps_count=0)


@needs_lab
def test_cli_reuses_the_lab_and_records_a_profile(lab, tmp_path, capsys):
    from sgdsim.cli import main

    out = tmp_path / "rec.json"
    argv = ["lab", "run", MODEL, "--workers", "1", "--batch-size", str(BATCH), "--bandwidth",
            "50Mbps", "--overlap", "--duration", "6s", "--warmup", "2s", "--format", "json",
            "--record-profile", str(out)]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["workers"] == 1 and rows[0]["overlap"] and rows[0]["throughput"] > 0
    prof = load_profile(out)
    assert prof.job.overlap and prof.job.bandwidth_bps == BW and prof.comm_s is not None
    idx = prof.index()
    down = prof.comm_s[:, idx["down:fc2"]]
    size = next(op.size_bytes for op in prof.ops if op.id == "down:fc2")
    assert size * 8 / BW * 0.8 < down.mean() < size * 8 / BW * 1.5  # the shaped link's pace
    assert prof.durations_s[:, idx["fwd:fc1"]].min() > 0
    with pytest.raises(SgdsimError, match="exists"):
        run_training(MODEL, 1, BATCH, BW, duration_s=3, warmup_s=1, lab=lab,
                     record_profile=str(out))


@needs_lab
def test_cli_calibrates_a_hardware_file_from_one_worker(lab, tmp_path, capsys):
    """The calibrated file makes the model's 1-worker step equal the measured one (to 0.5 %)."""
    from sgdsim.calibrate_worker import model_step_s
    from sgdsim.cli import main
    from sgdsim.hardware import Hardware, load_hardware, save_hardware

    hw, out = tmp_path / "hw.json", tmp_path / "cal.json"
    save_hardware(Hardware(BW, 0.0, 8 / BW, 0.0), hw)
    argv = ["lab", "run", MODEL, "--workers", "1", "--batch-size", str(BATCH), "--bandwidth",
            "50Mbps", "--duration", "6s", "--warmup", "2s", "--format", "json",
            "--calibrate", str(hw), "-o", str(out)]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)[0]
    cal = load_hardware(out)
    measured = BATCH / row["throughput_intervals"]
    assert cal.measured["calibration"]["measured_step_s"] == pytest.approx(measured, rel=1e-9)
    prof = profile_lab_model(MODEL, BATCH, overlap=False, steps=5)
    assert cal.measured["calibration"]["predicted_step_s_after"] == pytest.approx(measured, rel=5e-3)
    assert model_step_s(prof, cal, "ps", "async", cal.parse_alpha_s_per_byte or 0.0) == \
        pytest.approx(measured, rel=0.05)  # another standalone profile: its own noise


@pytest.mark.parametrize("extra,msg", [
    (["--workers", "2", "--calibrate", "HW", "-o", "OUT"], "use --workers 1"),
    (["--workers", "1", "--calibrate", "HW"], "needs -o"),
    (["--workers", "1", "-o", "OUT"], "goes with --calibrate"),
    (["--workers", "1", "--calibrate", "MISSING", "-o", "OUT"], "cannot read"),
])
def test_lab_run_calibrate_options_fail_before_any_lab(tmp_path, capsys, extra, msg):
    from sgdsim.cli import main
    from sgdsim.hardware import Hardware, save_hardware

    save_hardware(Hardware(BW, 0.0, 8 / BW, 0.0), tmp_path / "hw.json")
    subst = {"HW": str(tmp_path / "hw.json"), "OUT": str(tmp_path / "out.json"),
             "MISSING": str(tmp_path / "nope.json")}
    argv = ["lab", "run", MODEL, "--batch-size", "4", *[subst.get(a, a) for a in extra]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


# ----------------------------------------------------------------------------- held-out trainer

@pytest.mark.parametrize("kwargs, message", [
    ({"trainer": "tf"}, "trainer must be one of"),
    ({"trainer": "torch", "overlap": True}, "one server without overlap"),
    ({"trainer": "torch", "ps_count": 2}, "one server without overlap"),
    ({"trainer": "torch", "arch": "allreduce", "mode": "sync"}, "use overlap = true"),
])
def test_torch_trainer_options_are_checked_before_any_lab(kwargs, message):
    from sgdsim.errors import ConfigError
    from sgdsim.lab.train.runner import check_config

    base = {"arch": "ps", "mode": "async", "overlap": False, "ps_count": 1, "stagger_s": 0.0}
    a = {**base, **kwargs}
    with pytest.raises(ConfigError, match=message):
        check_config(MODEL, 2, BATCH, BW, a["arch"], a["mode"], a["overlap"], 5, 1, None,
                     a["ps_count"], a["stagger_s"], a.get("trainer", "lab"))


@needs_lab
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_torch_rpc_parameter_server_trains_over_the_shaped_nic(lab, mode):
    """The held-out PS (torch.distributed.rpc): both workers step and the server's model moves;
    every step sends M bytes out of the server's shaped NIC (and M in, the other direction),
    so the workers together cannot beat batch·B/(8·M) (shared memory would: it is really off)."""
    r = run_training(MODEL, 2, BATCH, BW, mode=mode, duration_s=8, warmup_s=2, lab=lab,
                     trainer="torch")
    assert min(r.steps) > 0 and r.param_change > 0 and math.isfinite(r.loss_last)
    prof = profile_lab_model(MODEL, BATCH, overlap=False, steps=3)
    assert r.throughput_intervals <= 1.05 * BATCH * BW / (8 * prof.model_bytes())
