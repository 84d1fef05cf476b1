"""sgdsim profile: per-layer PyTorch profiling into the profile format (docs/profiler.md).

Tiny models, batch 2-4, 2-3 steps: the structure (DAG, sizes, naming, overlap rules) is
checked exactly; times only for being positive, since this CPU is shared and noisy.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import sgdsim  # noqa: E402
from sgdsim.errors import ConfigError, ProfileError  # noqa: E402
from sgdsim.profiler import NEEDS_TORCH, ProfileRun, profile_model  # noqa: E402
from sgdsim.profiler import cli as profiler_cli  # noqa: E402
from sgdsim.profiler import zoo  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CUSTOM = ROOT / "examples" / "models" / "custom_model.py"
FAST = dict(steps=2, warmup=1, threads=1)
B = 10e9 / 8  # predict's default bandwidth, bytes/s


def _run(spec, batch=2, **kw) -> ProfileRun:
    return profile_model(spec, batch, **{**FAST, **kw})


@pytest.fixture(scope="module")
def mlp():
    return _run("zoo:mlp?width=16&depth=3&inputs=20", batch=4, steps=3)


@pytest.fixture(scope="module")
def mlp_nooverlap():
    return _run("zoo:mlp?width=16&depth=3&inputs=20", batch=4, steps=3, overlap=False)


@pytest.fixture(scope="module")
def resnet():
    return _run("zoo:small-resnet?channels=4&image_size=8")


def _ops(prof, prefix):
    return [op for op in prof.ops if op.id.startswith(prefix + ":")]


def _col(prof, op_id):
    return prof.durations_s[:, prof.index()[op_id]]


def _fwd_deps(op):
    return [d for d in op.deps if d.startswith("fwd:")]


def _param_bytes(module):
    return sum(p.numel() * p.element_size() for p in module.parameters())


# ----------------------------------------------------------------------------- times


def test_times_positive_and_steps(mlp):
    prof = mlp.profile
    assert prof.n_steps == 3
    for op in prof.ops:
        if op.kind == "compute":
            assert (_col(prof, op.id) > 0).all(), op.id
    assert mlp.profiled_step_s > 0 and mlp.plain_step_s > 0
    assert mlp.overhead == pytest.approx(mlp.profiled_step_s / mlp.plain_step_s - 1)
    assert "profiling overhead" in mlp.overhead_line()
    # the layers' times add up to (most of) each profiled step: glue code is charged too
    steps_s = prof.extra["profiler"]["profiled_steps_s"]
    assert (prof.durations_s.sum(axis=1) <= steps_s).all()


SLEEPY = """
import time
import torch
from torch import nn


class Sleep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fwd_s, bwd_s):
        time.sleep(fwd_s)
        ctx.bwd_s = bwd_s
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(ctx.bwd_s)
        return grad, None, None


class Timed(nn.Module):
    def __init__(self, fwd_s, bwd_s):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.fwd_s, self.bwd_s = fwd_s, bwd_s

    def forward(self, x):
        return Sleep.apply(x @ self.weight, self.fwd_s, self.bwd_s)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.relu, self.b = Timed(0.020, 0.015), nn.ReLU(inplace=True), Timed(0.005, 0.025)

    def forward(self, x):
        x = self.relu(self.a(x))
        time.sleep(0.010)  # glue code: charged to the next layer, b
        return self.b(x)


def build(batch_size):
    return Model(), (torch.randn(batch_size, 4), None), lambda out, _: out.sum()
"""


def test_known_layer_times_are_attributed_right(tmp_path):
    """Sleeps of known length in forward, backward and glue code land on the right layers,
    including the first layer's backward (its input needs no gradient) and an in-place ReLU."""
    path = tmp_path / "sleepy.py"
    path.write_text(SLEEPY)
    prof = _run(f"{path}:build", steps=3).profile
    expected = {"fwd:a": 0.020, "fwd:b": 0.015, "bwd:a": 0.015, "bwd:b": 0.025}
    for op_id, seconds in expected.items():
        times = _col(prof, op_id)
        assert (times >= seconds).all(), op_id
        assert times.min() < seconds + 0.008, op_id  # min: a loaded CPU may oversleep once
    for op_id in ("fwd:relu", "bwd:relu", "fwd:loss", "bwd:loss"):
        assert _col(prof, op_id).min() < 0.005, op_id


def test_first_layer_backward_and_update_are_timed(resnet):
    prof = resnet.profile
    first = prof.ops[[op.id for op in prof.ops].index("fwd:stem.0")]
    assert [d for d in first.deps if not d.startswith("down:")] == []  # a root
    assert (_col(prof, "bwd:stem.0") > 0).all()
    assert (_col(prof, "upd:stem.0") > 0).all()
    # its gradient is the last one ready: nothing runs after the first layer's backward
    assert prof.extra["profiler"]["grad_ready_order"][-1] == "stem.0"


def test_inplace_relu_model_profiles():
    run = _run("zoo:small-cnn?channels=4&image_size=8&inplace=true")
    for relu in ("2", "5"):
        assert "ReLU(inplace=True)" in run.profile.ops[run.profile.index()[f"bwd:{relu}"]].name
        assert (_col(run.profile, f"bwd:{relu}") > 0).all()


# ----------------------------------------------------------------------------- sizes


def test_param_bytes_per_layer_and_total(resnet):
    model = zoo.small_resnet(2, channels=4, image_size=8)[0]
    modules = dict(model.named_modules())
    downs = _ops(resnet.profile, "down")
    for op in downs:
        assert op.size_bytes == _param_bytes(modules[op.layer]), op.id
        assert resnet.profile.index()[f"up:{op.layer}"] >= 0
    assert sum(op.size_bytes for op in downs) == _param_bytes(model)
    assert resnet.profile.model_bytes() == _param_bytes(model)


def test_element_size_counts_and_resized_batch(tmp_path):
    """float64 parameters (8 bytes), in-place ReLU, and fn() without batch_size."""
    path = tmp_path / "dbl.py"
    path.write_text(textwrap.dedent("""
        import torch
        from torch import nn
        def build():
            model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(inplace=True), nn.Linear(7, 3)).double()
            x = torch.randn(2, 5, dtype=torch.float64)
            return model, (x, torch.tensor([0, 2])), nn.CrossEntropyLoss()
    """))
    run = _run(f"{path}:build", batch=3)
    sizes = {op.layer: op.size_bytes for op in _ops(run.profile, "down")}
    assert sizes == {"0": (5 * 7 + 7) * 8, "2": (7 * 3 + 3) * 8}
    assert run.profile.job.batch_size == 3 and run.profile.job.model == "dbl:build"


# ----------------------------------------------------------------------------- DAG


def test_mlp_is_a_chain(mlp):
    fwd = _ops(mlp.profile, "fwd")
    assert [op.layer for op in fwd] == ["0", "1", "2", "3", "4", "loss"]
    assert _fwd_deps(fwd[0]) == []
    for prev, op in zip(fwd, fwd[1:]):
        assert _fwd_deps(op) == [prev.id]
    bwd = _ops(mlp.profile, "bwd")
    assert [op.layer for op in bwd] == ["loss", "4", "3", "2", "1", "0"]
    assert bwd[0].deps == ("fwd:loss",)
    for prev, op in zip(bwd, bwd[1:]):
        assert op.deps == (prev.id,)


def test_residual_cnn_has_branches(resnet):
    fwd = _ops(resnet.profile, "fwd")
    joins = {op.layer: _fwd_deps(op) for op in fwd if len(_fwd_deps(op)) == 2}
    # identity shortcut of block 0: bn2 + the stem output; projection shortcut of block 1
    assert joins == {"layers.0.relu#2": ["fwd:stem.2", "fwd:layers.0.bn2"],
                     "layers.1.relu#2": ["fwd:layers.1.bn2", "fwd:layers.1.downsample.1"]}
    consumers = {}
    for op in fwd:
        for dep in _fwd_deps(op):
            consumers.setdefault(dep, []).append(op.layer)
    assert consumers["fwd:stem.2"] == ["layers.0.conv1", "layers.0.relu#2"]
    assert consumers["fwd:layers.0.relu#2"] == ["layers.1.conv1", "layers.1.downsample.0"]
    # backward deps are the forward deps reversed
    bwd = {op.layer: op.deps for op in _ops(resnet.profile, "bwd")}
    assert bwd["stem.2"] == ("bwd:layers.0.conv1", "bwd:layers.0.relu#2")


def test_custom_model_example():
    run = _run(f"{CUSTOM}:build", batch=4)
    prof = run.profile
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("custom_model_for_test", CUSTOM)
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.build(4)[0]
    sizes = {op.layer: op.size_bytes for op in _ops(prof, "down")}
    assert sizes["gate"] == _param_bytes(model.gate)  # proj and the direct parameter
    assert sum(sizes.values()) == _param_bytes(model)
    fwd = {op.layer: _fwd_deps(op) for op in _ops(prof, "fwd")}
    assert fwd["act"] == ["fwd:left"] and fwd["act#2"] == ["fwd:right"]
    assert fwd["gate"] == ["fwd:act", "fwd:act#2"]
    assert prof.job.model == "custom_model:build"


def test_module_function_spec():
    run = _run("sgdsim.profiler.zoo:mlp", batch=2)
    assert run.profile.job.model == "sgdsim.profiler.zoo:mlp"


def test_dynamic_control_flow_is_refused(tmp_path):
    path = tmp_path / "dyn.py"
    path.write_text(textwrap.dedent("""
        import torch
        from torch import nn
        class Dyn(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin, self.calls = nn.Linear(3, 3), 0
            def forward(self, x):
                self.calls += 1
                for _ in range(1 + self.calls % 3):
                    x = self.lin(x)
                return x
        def build():
            return Dyn(), (torch.randn(2, 3), None), lambda out, _: out.sum()
    """))
    with pytest.raises(ConfigError, match="calls its layers differently"):
        _run(f"{path}:build")


# ----------------------------------------------------------------------------- overlap


def test_overlap_dependencies(mlp):
    prof = mlp.profile
    assert prof.job.overlap is True
    for op in _ops(prof, "fwd"):
        if f"down:{op.layer}" in prof.index():
            assert op.deps[0] == f"down:{op.layer}"
    for op in _ops(prof, "up"):
        assert op.deps == (f"bwd:{op.layer}",)
    for op in _ops(prof, "upd"):
        assert op.deps == (f"up:{op.layer}",) and op.resource == "ps"


def test_no_overlap_dependencies(mlp_nooverlap):
    prof = mlp_nooverlap.profile
    assert prof.job.overlap is False
    downs = tuple(op.id for op in _ops(prof, "down"))
    assert downs == ("down:0", "down:2", "down:4")
    fwd = _ops(prof, "fwd")
    assert fwd[0].deps == downs  # the root waits for every downlink
    assert all(not d.startswith("down:") for op in fwd[1:] for d in op.deps)
    ups = _ops(prof, "up")
    assert [op.layer for op in ups] == ["4", "2", "0"]  # gradient-ready order
    assert all(op.deps == ("bwd:0",) for op in ups)  # after the terminal backward
    kinds = [op.id.split(":")[0] for op in prof.ops]
    assert kinds == sorted(kinds, key=["down", "fwd", "bwd", "up", "upd"].index)


# ----------------------------------------------------------------------------- files, predict


def test_save_load_predict(mlp_nooverlap, tmp_path):
    path = tmp_path / "mlp.json"
    sgdsim.save_profile(mlp_nooverlap.profile, path)
    prof = sgdsim.load_profile(path)
    assert [op.id for op in prof.ops] == [op.id for op in mlp_nooverlap.profile.ops]
    assert prof.durations_s.tolist() == mlp_nooverlap.profile.durations_s.tolist()
    assert prof.extra["profiler"]["steps"] == 3
    job = prof.job
    assert job.model == "mlp?width=16&depth=3&inputs=20" and job.batch_size == 4
    assert job.framework == f"pytorch {torch.__version__}" and job.device.startswith("cpu")
    two = sgdsim.predict(str(path), workers=2, steps=3, warmup=1)
    assert two[0].throughput > 0
    # one worker, no overlap: the step is 2M/B of transfers around the compute
    one = sgdsim.predict(str(path), workers=1, steps=60, warmup=1)[0]
    b, M = job.batch_size, prof.model_bytes()
    worker = prof.durations_s[:, [i for i, op in enumerate(prof.ops) if op.resource == "worker"]]
    every = prof.durations_s.sum(axis=1)
    assert b / (every.max() + 2 * M / B) <= one.throughput * (1 + 1e-9)
    assert one.throughput <= b / (worker.sum(axis=1).min() + 2 * M / B) * (1 + 1e-9)
    assert one.throughput == pytest.approx(b / (prof.mean_compute_s() + 2 * M / B), rel=0.3)


def test_cli_profile(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="sgdsim")
    profiler_cli.register(parser.add_subparsers(dest="command"))
    out = tmp_path / "p.json"
    argv = ["profile", "zoo:mlp?width=8&inputs=8", "--batch-size", "2", "--steps", "2",
            "--warmup", "1", "--threads", "1", "--no-overlap", "-o", str(out)]
    args = parser.parse_args(argv)
    assert profiler_cli.cmd_profile(args) == 0
    assert sgdsim.load_profile(out).job.overlap is False
    err = capsys.readouterr().err
    assert f"wrote {out}" in err and "profiling overhead:" in err
    with pytest.raises(ProfileError, match="exists; refusing to overwrite"):
        profiler_cli.cmd_profile(args)  # refused before profiling
    assert profiler_cli.cmd_profile(parser.parse_args(argv + ["--force"])) == 0


# ----------------------------------------------------------------------------- errors


def _write(tmp_path, body):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(body))
    return path


BAD_FILES = {
    "wrong": ("def f():\n    return 1, 2\n", "must return"),
    "notmodule": ("def f():\n    return 1, (2, 3), len\n", "torch.nn.Module"),
    "raises": ("def f():\n    raise ValueError('boom')\n", "failed: ValueError: boom"),
    "nonscalar": ("import torch\ndef f():\n    return (torch.nn.Linear(2, 2), "
                  "(torch.ones(2, 2), None), lambda o, t: o)\n", "scalar tensor"),
    "shape": ("import torch\ndef f():\n    return (torch.nn.Linear(2, 2), "
              "(torch.ones(2, 5), None), lambda o, t: o.sum())\n", "fails on its example batch"),
    "syntax": ("def f(:\n", "cannot load model file"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_model_functions(tmp_path, case):
    body, message = BAD_FILES[case]
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError, match=message) as err:
        _run(f"{path}:f")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("spec, message", [
    ("zoo:nope", "unknown zoo model 'nope'"),
    ("zoo:mlp?bogus=1", "has no option 'bogus'"),
    ("zoo:mlp?width", "is not key=value"),
    ("missing_dir/missing.py:build", "does not exist"),
    (f"{CUSTOM}:nope", "has no function 'nope'"),
    ("nocolon", "is not zoo:NAME"),
    ("no_such_module_xyz:fn", "cannot import model module"),
])
def test_bad_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        _run(spec)


@pytest.mark.parametrize("argv, message", [
    (["zoo:nope"], "unknown zoo model 'nope'"),
    (["missing_dir/missing.py:build"], "does not exist"),
    pytest.param(["zoo:mlp", "--device", "cuda"], "CUDA is not available",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="needs no CUDA")),
])
def test_refused_profile_says_one_line(tmp_path, capsys, argv, message):
    """A refused measurement is one line on stderr: the "profiling ..." notice comes only once
    the model is built on its device."""
    from sgdsim.cli import main

    out = tmp_path / "p.json"
    assert main(["profile", *argv, "--batch-size", "2", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("sgdsim: error:")
    assert not out.exists()


def test_profile_notice_after_model_is_built(tmp_path, capsys):
    from sgdsim.cli import main

    out = tmp_path / "p.json"
    assert main(["profile", "zoo:mlp", "--batch-size", "2", "--steps", "1", "--warmup", "1",
                 "--threads", "1", "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("profiling zoo:mlp, batch 2: 1 warm-up and 1 measured steps")
    assert out.exists()


@pytest.mark.parametrize("kw, message", [
    (dict(batch_size=0), "batch size"), (dict(steps=0), "steps"), (dict(warmup=-1), "warmup"),
    (dict(threads=0), "threads"), (dict(device="tpu"), "device must be"),
])
def test_bad_arguments(kw, message):
    args = {"spec": "zoo:mlp", "batch_size": 2, **FAST, **kw}
    with pytest.raises(ConfigError, match=message):
        profile_model(**args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_unavailable():
    with pytest.raises(ConfigError, match="CUDA is not available"):
        _run("zoo:mlp", device="cuda")


def test_works_without_torch():
    code = textwrap.dedent("""
        import argparse, sys
        sys.modules["torch"] = None  # import torch now raises ImportError
        import sgdsim.profiler
        from sgdsim.profiler import cli
        cli.register(argparse.ArgumentParser().add_subparsers())
        try:
            sgdsim.profiler.profile_model("zoo:mlp", 2)
        except sgdsim.ConfigError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == NEEDS_TORCH


# ----------------------------------------------------------------------------- transformers


def test_tiny_gpt2_from_the_zoo():
    pytest.importorskip("transformers")
    options = "n_layer=2&n_embd=16&n_head=2&vocab_size=50&n_positions=16&seq_len=8"
    run = _run(f"zoo:gpt2?{options}")
    prof = run.profile
    model = zoo.gpt2(2, seq_len=8, n_layer=2, n_embd=16, n_head=2, vocab_size=50,
                     n_positions=16)[0]
    assert prof.model_bytes() == _param_bytes(model)  # tied lm_head counted once
    layers = {op.layer for op in _ops(prof, "down")}
    assert "transformer.wte" in layers and "lm_head" not in layers
    assert any(len(_fwd_deps(op)) >= 2 for op in _ops(prof, "fwd"))  # residual stream
    assert (prof.durations_s >= 0).all() and prof.mean_compute_s() > 0
