"""Mixed precision (torch.autocast): a step traced without data gives each call the precision
real autocast gives it, its casts priced from the ReLU estimators they resemble, and the
profiler times such a step; conflicting options are one line and exit code 2."""
from __future__ import annotations

import collections

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from sgdsim.cli import main  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.step_factor import profile_step_s as step_of  # noqa: E402
from sgdsim.ops.collect import call_dtype  # noqa: E402
from sgdsim.ops.estimate import CAST_BACKWARD_SHARE, Timed, _casts  # noqa: E402
from sgdsim.ops.graph import trace_model  # noqa: E402
from sgdsim.ops.roofline import CAST, cast_work  # noqa: E402
from sgdsim.ops.template import Call, TSpec, _Named  # noqa: E402
from sgdsim.ops.trace import SKIP  # noqa: E402
from sgdsim.profiler.spec import load_workload  # noqa: E402

MLP = "zoo:mlp?width=32&depth=2&inputs=16&classes=4"
CNN = "zoo:small-cnn"
PARAM_BYTES = 4 * (16 * 32 + 32 + 32 * 4 + 4)  # Linear(16, 32), Linear(32, 4): float32


class _Forward(TorchDispatchMode):
    """(function, its floating-point tensors' dtypes) of every call made, as the tracer keys them."""

    def __init__(self):
        super().__init__()
        self.seen: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if str(func) not in SKIP:
            floats = tuple(str(a.dtype).removeprefix("torch.") for a in args
                           if isinstance(a, torch.Tensor) and a.is_floating_point())
            self.seen[(str(func), floats)] += 1
        return out


def _real_forward(spec: str, batch: int) -> collections.Counter:
    """The forward and loss of a real step on this CPU under autocast, as dispatched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        work = load_workload(spec, batch)
    work.autocast = "bfloat16"
    mode = _Forward()
    with mode:
        work.forward()
    return mode.seen


def _traced(spec: str, batch: int) -> collections.Counter:
    step = trace_model(spec, batch, "bfloat16")
    return collections.Counter(
        (c.func, tuple(t.dtype for t in c.tensors() if t.dtype.startswith(("float", "bfloat"))))
        for c in step.calls)


@pytest.mark.parametrize("spec,batch", [(MLP, 8), (CNN, 4)])
def test_the_traced_step_has_real_autocasts_calls_and_precisions(spec, batch):
    """The oracle is PyTorch itself: the same model's forward run for real under autocast."""
    assert _traced(spec, batch) == _real_forward(spec, batch)


def test_under_autocast_products_run_in_bfloat16_and_the_loss_in_float32():
    calls = trace_model(MLP, 8, "bfloat16").calls
    by_func = collections.defaultdict(set)
    for c in calls:
        by_func[c.func].add(call_dtype(c))
    assert by_func["aten.addmm.default"] == {"bfloat16"}
    assert by_func["aten.nll_loss_forward.default"] == {"float32"}
    casts = [c for c in calls if c.func == CAST]
    # every weight and bias cast to bfloat16 once (depth 2: two linears), the input once
    to_half = [c for c in casts if dict(c.kwargs)["dtype"] == _Named("torch.bfloat16")]
    assert len(to_half) == 2 * 2 + 1 and all(c.tensors()[0].dtype == "float32" for c in to_half)
    # without autocast the same model has no cast at all
    assert not [c for c in trace_model(MLP, 8).calls if c.func == CAST]


def test_a_cast_moves_its_elements_in_both_types_and_back():
    cast = Call(CAST, (TSpec.dense((10, 30), "float32", True),), (("dtype", _Named("torch.bfloat16")),))
    work = cast_work(cast)
    assert work.fwd_bytes == 300 * (4 + 2) and work.bwd_bytes == work.fwd_bytes and work.fwd_flops == 0
    frozen = Call(CAST, (TSpec.dense((10, 30), "float32", False),), (("dtype", _Named("torch.bfloat16")),))
    assert cast_work(frozen).bwd_bytes == 0


class _Relu:
    def __init__(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd

    def predict(self, params):
        n = np.array([p["numel"] for p in params], float)
        return self.fwd * n, self.bwd * n


def test_a_cast_is_priced_as_the_mean_of_a_relu_in_its_two_types():
    cast = Call(CAST, (TSpec.dense((1000,), "float32", True),), (("dtype", _Named("torch.bfloat16")),))
    estimators = {("relu", "float32"): _Relu(4e-9, 9e-9), ("relu", "bfloat16"): _Relu(2e-9, 3e-9)}
    timed = Timed(np.zeros(1), np.zeros(1), ["unknown"])
    _casts([cast], [0], estimators, None, "dev", timed)
    assert timed.fwd[0] == pytest.approx(1000 * 3e-9)
    assert timed.bwd[0] == pytest.approx(1000 * 6e-9 * CAST_BACKWARD_SHARE)
    assert timed.source == ["cast"] and timed.casts_by_roofline == 0


def test_a_profile_estimated_under_autocast_prices_its_casts_and_says_so(tmp_path, capsys):
    from sgdsim.profile.io import load_profile
    db = str(tmp_path / "ops.sqlite")
    for dtype in ("float32", "bfloat16"):
        assert main(["ops", "measure", "--grid", "relu", "--samples", "12", "--repeats", "2", "--precision", "0",
                     "--dtype", dtype, "--db", db, "--seed", "3", "--quiet"]) == 0
    assert main(["ops", "measure", "--model", MLP, "--batch-size", "8", "--autocast", "bfloat16", "--repeats", "2",
                 "--precision", "0", "--no-step", "--db", db, "--quiet"]) == 0
    assert main(["ops", "train", "--db", db, "--budget", "1", "--op", "relu", "--quiet"]) == 0
    out = tmp_path / "amp.json"
    assert main(["profile", MLP, "--batch-size", "8", "--estimate", "--db", db, "--autocast", "bfloat16",
                 "-o", str(out)]) == 0
    prof = load_profile(str(out))
    info = prof.extra["estimated"]
    assert info["autocast"] == "bfloat16" and info["dtype"] == "float32"
    assert info["time_fraction_measured"] == pytest.approx(1.0)  # every call, casts included, measured
    assert prof.model_bytes() == PARAM_BYTES  # float32 parameters
    assert "--autocast bfloat16" in prof.job.source
    err = " ".join(capsys.readouterr().err.split())
    assert "in autocast bfloat16" in err and "mixed precision" in err
    # no autocast step timed on the device: the estimate says it runs low and how to time one
    assert "no autocast step is timed on this device" in err and "--autocast bfloat16" in err
    # the commands it says to run next name the database it was given
    assert f"--batch-size 8 --autocast bfloat16 --db {db}" in err
    # a batch never measured: its casts are priced from the ReLU rows, the rest estimated or roofline
    assert main(["profile", MLP, "--batch-size", "64", "--estimate", "--db", db, "--autocast", "bfloat16",
                 "-o", str(tmp_path / "amp64.json")]) == 0
    info = load_profile(str(tmp_path / "amp64.json")).extra["estimated"]
    assert info["calls_by_source"]["cast"] >= 1 and info["casts_by_roofline"] == 0
    # the step factor of steps timed under autocast, stored apart from float32's
    argv = ["profile", MLP, "--batch-size", "8", "--estimate", "--db", db, "--autocast", "bfloat16",
            "--step-factor", "-o", str(tmp_path / "scaled.json")]
    assert main(argv) == 2 and "autocast-bfloat16" in capsys.readouterr().err
    assert main(["ops", "measure", "--model", MLP, "--batch-size", "8", "--autocast", "bfloat16",
                 "--db", db, "--quiet"]) == 0
    with open_db(db, create=False) as handle:
        steps = handle.load_steps()
    assert [s["dtype"] for s in steps] == ["autocast-bfloat16"]
    assert main(argv) == 0
    scaled = load_profile(str(tmp_path / "scaled.json"))
    factor = scaled.extra["estimated"]["step_factor"]
    assert factor["steps"] == 1 and factor["factor"] == pytest.approx(steps[0]["step_s"] / steps[0]["calls_s"])
    assert step_of(scaled) == pytest.approx(step_of(prof) * factor["factor"], rel=1e-6)
    # with autocast steps timed on the device, an autocast estimate is scaled by default (runs
    # 60 and 62); --no-step-factor leaves it as its calls sum
    capsys.readouterr()
    default = tmp_path / "default.json"
    assert main(argv[:-3] + ["-o", str(default)]) == 0
    assert step_of(load_profile(str(default))) == pytest.approx(step_of(scaled), rel=1e-9)
    err = " ".join(capsys.readouterr().err.split())
    assert "scaled by the device's autocast step factor" in err and "the default under --autocast" in err
    unscaled = tmp_path / "unscaled.json"
    assert main(argv[:-3] + ["--no-step-factor", "-o", str(unscaled)]) == 0
    assert load_profile(str(unscaled)).extra["estimated"]["step_factor"] is None
    assert step_of(load_profile(str(unscaled))) == pytest.approx(step_of(prof), rel=1e-9)
    from sgdsim.ops.estimate import estimate_profile
    with open_db(db, create=False) as handle:  # the Python API's default is the command's
        device = handle.devices()[0].name
        api = estimate_profile(MLP, 8, handle, device, autocast="bfloat16")
    assert step_of(api) == pytest.approx(step_of(scaled), rel=1e-9)


def test_a_measured_profile_runs_its_forward_under_autocast():
    from sgdsim.profiler.api import profile_model
    run = profile_model(MLP, 8, steps=2, warmup=1, threads=1, autocast="bfloat16")
    assert run.profile.extra["profiler"]["autocast"] == "bfloat16"
    assert run.profile.job.source.endswith("--autocast bfloat16")
    assert run.profile.model_bytes() == PARAM_BYTES
    work = load_workload(MLP, 8)
    work.autocast = "bfloat16"
    output, loss = work.forward()
    assert output.dtype == torch.bfloat16 and loss.dtype == torch.float32


@pytest.mark.parametrize("argv,needle", [
    (["profile", MLP, "--batch-size", "4", "--estimate", "--autocast", "bfloat16", "--dtype", "bfloat16"],
     "give one of them"),
    (["profile", MLP, "--batch-size", "4", "--estimate", "--dtype", "bfloat16", "--step-factor"],
     "not in bfloat16 throughout"),
    (["ops", "measure", "--grid", "relu", "--autocast", "bfloat16"], "--autocast applies to --model"),
    (["profile", MLP, "--batch-size", "4", "--no-step-factor"], "apply to --estimate"),
    (["profile", "gpt:layers=2,hidden=64,heads=2,seq=16,vocab=100", "--autocast", "bfloat16"],
     "--autocast does not apply"),
])
def test_conflicting_autocast_options_are_one_line_and_exit_2(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = ["--db", str(tmp_path / "ops.sqlite")] if argv[0] == "ops" else []
    if "--step-factor" in argv:  # checked against the database's steps: one with none
        assert main(["ops", "measure", "--grid", "relu", "--samples", "1", "--repeats", "2",
                     "--precision", "0", "--db", str(tmp_path / "ops.sqlite"), "--quiet"]) == 0
        db = ["--db", str(tmp_path / "ops.sqlite")]
    try:  # argparse's own errors exit; sgdsim's return 2
        code = main(argv + db + ["-o", str(tmp_path / "x.json")] if argv[0] == "profile" else argv + db)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


class _Stated:
    def __init__(self, error):
        self.stats = {"validation_error": error}


def test_a_cast_priced_as_a_relu_errs_as_the_relu_estimator_does():
    from sgdsim.ops.estimate import step_error_rel
    estimators = {("relu", "float32"): _Stated(0.07), ("addmm", "bfloat16"): _Stated(0.2)}
    timed = Timed(np.array([1.0, 3.0]), np.zeros(2), ["cast", "estimated"], ops=["other", "addmm"])
    assert step_error_rel(timed, estimators) == pytest.approx((1 * 0.07 + 3 * 0.2) / 4)
    timed.casts_by_roofline = 1  # a type had no ReLU estimator: the roofline's error (none fitted: 100 %)
    assert step_error_rel(timed, estimators) == pytest.approx((1 * 1.0 + 3 * 0.2) / 4)


TINY_GPT2 = "zoo:gpt2?n_layer=1&n_embd=32&n_head=2&seq_len=8&vocab_size=100"
TINY_VIT = "zoo:vit-base?num_hidden_layers=1&hidden_size=32&num_attention_heads=2&intermediate_size=64&image_size=32&patch_size=8"


def test_the_fake_tensor_trace_builds_the_model_the_meta_trace_builds():
    """The same parameters, shared ones kept shared (GPT-2's head is its embedding), the same
    layers owning them; ViT, whose own initialisation reads values, builds (on the meta device,
    where that initialisation is skipped, then moved)."""
    for spec in (TINY_GPT2, TINY_VIT):
        fake, meta = trace_model(spec, 2, "bfloat16"), trace_model(spec, 2)
        assert [tuple(p.shape) for p in fake.work.model.parameters()] == \
            [tuple(p.shape) for p in meta.work.model.parameters()]
        assert sorted(fake.discovered[0]) == sorted(meta.discovered[0])
    gpt2 = trace_model(TINY_GPT2, 2, "bfloat16").work.model
    assert gpt2.lm_head.weight is gpt2.transformer.wte.weight
    assert all(isinstance(p, torch.nn.Parameter) and p.requires_grad for p in gpt2.parameters())
