"""float16 autocast trains with a gradient scaler: the profiler's steps (plain, and profiled
with the unscale split by layer) train exactly as torch.amp.GradScaler does, overflows
included; bfloat16 trains without one."""
from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from sgdsim.profiler.runner import LR, _plain_step, _timed_update  # noqa: E402
from sgdsim.profiler.precision import needs_scaler  # noqa: E402
from sgdsim.profiler.scaler import INIT_SCALE, LossScale  # noqa: E402
from sgdsim.profiler.spec import load_workload  # noqa: E402

MLP = "zoo:mlp?width=32&depth=2&inputs=16&classes=4"
# per step, a factor on the loss: 1e30 overflows float16's gradients (a skipped step)
BOOSTS = (1.0, 1.0, 1e30, 1.0, 1e30, 1.0)


def _workload(boosts):
    """The MLP under float16 autocast, its loss multiplied by the next boost each step."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        work = load_workload(MLP, 8)
    work.autocast = "float16"
    loss_fn, queue = work.loss_fn, list(boosts)
    work.loss_fn = lambda out, target: loss_fn(out, target) * queue.pop(0)
    return work


def _reference(boosts):
    """torch.amp.GradScaler with its defaults and torch.optim.SGD: (weights, scales)."""
    work = _workload(boosts)
    params = list(work.model.parameters())
    opt, scaler, scales = torch.optim.SGD(params, lr=LR), torch.amp.GradScaler("cpu"), []
    for _ in boosts:
        scaler.scale(work.forward()[1]).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        scales.append(scaler.get_scale())
    return [p.detach().clone() for p in params], scales


def _plain(boosts):
    work = _workload(boosts)
    params = list(work.model.parameters())
    opt, scaler, scales = torch.optim.SGD(params, lr=LR), LossScale("cpu"), []
    for _ in boosts:
        _plain_step(work, (opt, scaler), time.perf_counter)
        scales.append(float(scaler.scale))
    return [p.detach().clone() for p in params], scales


def _by_layer(boosts):
    """The profiled step's update: each layer's gradients unscaled, then each layer updated."""
    work = _workload(boosts)
    params = list(work.model.parameters())
    owner = {i: [p] for i, p in enumerate(params)}  # one "layer" per parameter
    scaler, scales = LossScale("cpu"), []
    for _ in boosts:
        scaler.scaled(work.forward()[1]).backward()
        times = _timed_update(owner, len(params), time.perf_counter, scaler)
        assert len(times) == len(params) and min(times) >= 0
        assert all(p.grad is None for p in params)
        scales.append(float(scaler.scale))
    return [p.detach().clone() for p in params], scales


@pytest.mark.parametrize("ours", [_plain, _by_layer])
def test_steps_train_as_grad_scaler(ours):
    ref_weights, ref_scales = _reference(BOOSTS)
    weights, scales = ours(BOOSTS)
    assert scales == ref_scales
    # the overflowing steps were skipped and halved the scale; the others kept it
    assert scales == [INIT_SCALE, INIT_SCALE, INIT_SCALE / 2, INIT_SCALE / 2, INIT_SCALE / 4,
                      INIT_SCALE / 4]
    assert all(torch.equal(a, b) for a, b in zip(weights, ref_weights))


def test_skipped_steps_leave_the_weights():
    """All steps overflow: the weights are the initial ones, where unscaled updates would
    have written inf or NaN."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        start = [p.detach().clone() for p in load_workload(MLP, 8).model.parameters()]
    weights, scales = _by_layer((1e30, 1e30))
    assert all(torch.equal(a, b) for a, b in zip(weights, start))
    assert scales == [INIT_SCALE / 2, INIT_SCALE / 4]


def test_only_float16_is_scaled():
    assert needs_scaler("float16")
    assert not needs_scaler("bfloat16") and not needs_scaler(None)


def test_a_float16_trace_unscales_every_gradient_before_its_update():
    from sgdsim.ops.graph import UNSCALE_FUNC, UPDATE_FUNC, trace_model

    step = trace_model(MLP, 8, autocast="float16")
    owner = step.discovered[0]
    for idx, calls in step.update_calls().items():
        shapes = [tuple(p.shape) for p in owner[idx]]
        unscales = [c for c in calls if c.func == UNSCALE_FUNC]
        assert [c.func for c in calls] == [UNSCALE_FUNC, UPDATE_FUNC] * len(shapes)
        assert [c.args[0].shape for c in unscales] == shapes
        assert all(c.args[0].dtype == "float32" and not c.needs_grad for c in unscales)
    bf16 = trace_model(MLP, 8, autocast="bfloat16").update_calls()
    assert all(c.func == UPDATE_FUNC for cs in bf16.values() for c in cs)


def test_a_float16_estimate_prices_the_unscale(tmp_path, capsys):
    """Measured as the model's exact calls, then estimated: every call measured, and each
    layer's update is its gradients' unscale and update as the database times them."""
    pytest.importorskip("sqlalchemy")
    import numpy as np

    from sgdsim.cli import main
    from sgdsim.ops.db import open_db
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.graph import UNSCALE_FUNC, trace_model
    from sgdsim.profile.io import load_profile

    db = str(tmp_path / "ops.sqlite")
    assert main(["ops", "measure", "--model", MLP, "--batch-size", "8", "--autocast", "float16", "--repeats",
                 "2", "--precision", "0", "--no-step", "--db", db, "--quiet"]) == 0
    out = tmp_path / "f16.json"
    assert main(["profile", MLP, "--batch-size", "8", "--estimate", "--db", db, "--autocast", "float16",
                 "-o", str(out)]) == 0
    prof = load_profile(str(out))
    assert prof.extra["estimated"]["time_fraction_measured"] == pytest.approx(1.0)
    updates = [c for cs in trace_model(MLP, 8, autocast="float16").update_calls().values() for c in cs]
    with open_db(db, create=False) as handle:
        device = handle.devices()[0].name
        timed = time_calls(updates, handle, device, {})
    unscale = sum(f for c, f in zip(updates, timed.fwd) if c.func == UNSCALE_FUNC)
    assert unscale > 0 and set(timed.source) == {"measured"}
    upd = prof.mean_compute_s("ps")  # the update ops
    assert upd == pytest.approx(float(np.sum(timed.fwd)), rel=1e-9)
    assert "each gradient unscaled before it" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("autocast, scaled", [("float16", True), ("bfloat16", False)])
def test_a_measured_profile_says_whether_it_scaled(autocast, scaled):
    from sgdsim.profiler.api import profile_model

    run = profile_model(MLP, 8, steps=2, warmup=1, threads=1, autocast=autocast)
    assert run.profile.extra["profiler"]["grad_scaler"] is scaled
    assert run.profile.extra["profiler"]["autocast"] == autocast


def test_the_profilers_whole_run_trains_as_grad_scaler():
    """measure(): a plain step, the discovery step, then pairs of plain and profiled steps,
    every one of them a GradScaler step (the discovery step's loss scaled too): the weights
    after it are the reference's after as many steps, to the bit."""
    from sgdsim.profiler.runner import measure

    work = _workload((1.0,) * 6)
    measure(work, steps=2, warmup=1)  # 1 plain + 1 discovery + 2 pairs
    ref_weights, _ = _reference((1.0,) * 6)
    assert all(torch.equal(p.detach(), r) for p, r in zip(work.model.parameters(), ref_weights))
