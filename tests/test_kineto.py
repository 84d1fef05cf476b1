"""sgdsim import kineto: torch.profiler Chrome traces -> profiles (docs/profile-format.md).

Two REAL traces recorded on a 2-core CPU with examples/kineto/record_trace.py (tests/data/kineto/:
small-cnn with record_function layer ranges, an MLP with with_stack=True nn.Module events), and
SYNTHETIC traces built below with hand-set durations, whose per-layer sums are the oracle. The GPU
trace is synthetic: it mirrors the Kineto format (cpu_op, cuda_runtime launches, kernel and
gpu_memcpy events joined by args.correlation, an autograd thread for the backward) but was not
recorded on a GPU.
"""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from sgdsim.cli import main
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.profile.io import load_profile
from sgdsim.profile.kineto import import_kineto

DATA = Path(__file__).parent / "data" / "kineto"
CNN = DATA / "small-cnn.trace.json.gz"  # zoo:small-cnn, batch 8, 3 steps, 1 thread
MLP = DATA / "mlp-modules.trace.json.gz"  # zoo:mlp?width=64, batch 8, 2 steps, with_stack
BWD = "autograd::engine::evaluate_function: "


def _structure(p):
    return [(op.id, op.name, op.layer, op.kind, op.resource, op.deps, op.size_bytes)
            for op in p.ops]


def _col(p, op_id):
    return p.durations_s[:, p.index()[op_id]]


def _layers(p):
    return [op.layer for op in p.ops if op.id.startswith("fwd:")]


# ----------------------------------------------------------------------------- real traces

@pytest.fixture(scope="module")
def cnn():
    return import_kineto(CNN, batch_size=8)


def test_cnn_layers_and_parameters_match_the_model(cnn):
    torch = pytest.importorskip("torch")
    from sgdsim.profiler.recorder import find_layers
    from sgdsim.profiler.zoo import small_cnn

    model = small_cnn(8)[0]
    layers = find_layers(model)
    assert _layers(cnn) == [name for name, _ in layers] + ["loss"]
    expected = {name: sum(p.numel() * p.element_size() for p in m.parameters())
                for name, m in layers}
    got = {op.layer: op.size_bytes for op in cnn.ops if op.id.startswith("down:")}
    assert got == {k: v for k, v in expected.items() if v}
    assert cnn.model_bytes() == sum(p.numel() * 4 for p in model.parameters()) == 22056
    assert cnn.n_steps == 3 and cnn.job.model == "small-cnn" and torch is not None


def test_cnn_matches_sgdsim_profile(cnn):
    pytest.importorskip("torch")
    from sgdsim.profiler import profile_model

    ref = profile_model("zoo:small-cnn", 8, steps=2, warmup=1, threads=1).profile
    assert _structure(cnn) == _structure(ref)  # names, labels, DAG, sizes, uplink order
    # Different runs and methods (op sums here, hook intervals there): a loose factor only.
    for layer_ops in (("fwd",), ("bwd",), ("fwd", "bwd")):
        cols = [i for i, op in enumerate(cnn.ops) if op.id.split(":")[0] in layer_ops]
        ours = cnn.durations_s[:, cols].sum(axis=1).mean()
        theirs = ref.durations_s[:, cols].sum(axis=1).mean()
        assert 0.1 < ours / theirs < 10, (layer_ops, ours, theirs)


def test_cnn_gradients_ready_in_reverse_layer_order(cnn):
    info = cnn.extra["kineto"]
    assert info["grad_ready_order"] == ["8", "4", "3", "1", "0"]
    ready = [info["grad_ready_s"][k] for k in info["grad_ready_order"]]
    assert ready == sorted(ready) and ready[0] > 0
    assert [op.layer for op in cnn.ops if op.id.startswith("up:")] == info["grad_ready_order"]


def _trace_events(path):
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
            if e.get("ph") == "X"]


def test_cnn_backward_is_every_autograd_node(cnn):
    """Independent oracle: per step, the backward columns add up to the trace's
    evaluate_function events (they do not nest without activation checkpointing)."""
    events = _trace_events(CNN)
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    bwd_cols = [i for i, op in enumerate(cnn.ops) if op.id.startswith("bwd:")]
    for k, s in enumerate(steps):
        total_us = sum(e["dur"] for e in events if e["name"].startswith(BWD)
                       and s["ts"] <= e["ts"] <= s["ts"] + s["dur"])
        assert cnn.durations_s[k, bwd_cols].sum() == pytest.approx(total_us * 1e-6, rel=1e-9)
    assert (cnn.durations_s[:, [i for i, op in enumerate(cnn.ops)
                                if op.resource == "worker"]] > 0).all()


def test_module_events_trace():
    p = import_kineto(MLP, batch_size=8)
    assert _layers(p) == ["Linear_0", "ReLU_0", "Linear_1", "ReLU_1", "Linear_2", "loss"]
    sizes = {op.layer: op.size_bytes for op in p.ops if op.id.startswith("up:")}
    # zoo:mlp?width=64: 784 -> 64 -> 64 -> 10, float32 weights and biases
    assert sizes == {"Linear_2": (64 * 10 + 10) * 4, "Linear_1": (64 * 64 + 64) * 4,
                     "Linear_0": (784 * 64 + 64) * 4}
    assert list(sizes) == ["Linear_2", "Linear_1", "Linear_0"]  # gradient-ready order
    assert p.ops[p.index()["fwd:loss"]].name == "loss (CrossEntropyLoss)"
    assert p.job.device.startswith("cpu")


# ----------------------------------------------------------------------------- synthetic

def X(name, ts, dur, cat="cpu_op", tid=1, pid=1, **args):  # noqa: N802 - a trace event
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def _seq(n):
    return {"Sequence number": n, "Fwd thread id": 0}


def cpu_trace():
    """Layer a (one op, nested addmm), glue, layer b, loss; backward on the same thread."""
    acc = {"Input type": ["float"], "Input Strides": [[8, 1]]}
    ev = [
        X("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        X("layer: a | Linear(8, 4)", 10, 90, cat="user_annotation"),
        X("aten::linear", 20, 50, **_seq(1)), X("aten::addmm", 30, 30, **_seq(2)),
        X("aten::add", 105, 5, **_seq(3)),  # glue between a and b: charged to b
        X("layer: b | ReLU()", 120, 80, cat="user_annotation"),
        X("aten::relu", 130, 20, **_seq(4)),
        X("aten::cross_entropy_loss", 210, 30, **_seq(5)),  # after the last layer: loss
        X(BWD + "NllLossBackward0", 300, 10, **_seq(5)),
        X(BWD + "ReluBackward0", 320, 15, **_seq(4)),
        X(BWD + "AddBackward0", 340, 3, **_seq(3)),
        X(BWD + "AddmmBackward0", 350, 40, **_seq(2)),
        X(BWD + "torch::autograd::AccumulateGrad", 395, 5),
        X("torch::autograd::AccumulateGrad", 396, 3, **{"Input Dims": [[4, 8]], **acc}),
        X(BWD + "TBackward0", 405, 4, **_seq(1)),
        X(BWD + "torch::autograd::AccumulateGrad", 410, 5),
        X("torch::autograd::AccumulateGrad", 411, 3, **{"Input Dims": [[4]], **acc}),
        X("Optimizer.step#SGD.step", 500, 100, cat="user_annotation"),
        X("aten::add_", 510, 20), X("aten::add_", 540, 10),
    ]
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": ev}


def _write(tmp_path, trace, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(trace))
    return path


def test_cpu_oracle(tmp_path):
    p = import_kineto(_write(tmp_path, cpu_trace()), batch_size=4)
    us = 1e-6
    expected = {"fwd:a": 50, "fwd:b": 5 + 20, "fwd:loss": 30, "bwd:loss": 10,
                "bwd:b": 15 + 3, "bwd:a": 40 + 5 + 4 + 5, "upd:a": 20 + 10}
    for op_id, t in expected.items():
        assert _col(p, op_id) == pytest.approx([t * us]), op_id
    assert p.model_bytes() == (4 * 8 + 4) * 4
    assert [op.id for op in p.ops] == ["down:a", "fwd:a", "fwd:b", "fwd:loss", "bwd:loss",
                                       "bwd:b", "bwd:a", "up:a", "upd:a"]
    assert p.extra["kineto"]["grad_ready_s"] == {"a": pytest.approx((415 - 300) * us)}
    assert p.ops[1].name == "Linear(8, 4)" and p.job.model == "t"


def test_steps_split_at_optimizer_steps_without_profiler_steps(tmp_path):
    one = [e for e in cpu_trace()["traceEvents"] if not e["name"].startswith("ProfilerStep")]
    two = copy.deepcopy(one)
    for e in two:
        e["ts"] += 1000
        if "Sequence number" in e["args"]:
            e["args"]["Sequence number"] += 10
    two[1]["dur"] = 80  # step 1: a slower aten::linear
    p = import_kineto(_write(tmp_path, {"traceEvents": one + two}), batch_size=4)
    assert p.n_steps == 2
    assert _col(p, "fwd:a") == pytest.approx([50e-6, 80e-6])


def gpu_trace():
    """One GPU: forward ops on thread 1, backward on the autograd thread 2, kernels on
    stream 7 of device 0; each launch and its kernel share args.correlation."""
    ev, corr = [], iter(range(100, 200))

    def op(name, ts, dur, kernels, tid=1, **args):
        ev.append(X(name, ts, dur, tid=tid, **args))
        for k, (cat, kdur) in enumerate(kernels):
            c = next(corr)
            launch = "cudaLaunchKernel" if cat == "kernel" else "cudaMemcpyAsync"
            ev.append(X(launch, ts + 1 + k, 0.5, cat="cuda_runtime", tid=tid, correlation=c))
            ev.append({"ph": "s", "id": c, "pid": 1, "tid": tid, "ts": ts + 1 + k,
                       "cat": "ac2g", "name": "ac2g"})
            ev.append(X(f"kernel_{c}", 1000 + 10 * c, kdur, cat=cat, pid=0, tid=7,
                        correlation=c, device=0, stream=7))
    ev.append(X("ProfilerStep#0", 0, 3000, cat="user_annotation"))
    ev.append(X("layer: a", 10, 90, cat="user_annotation"))
    # Kineto repeats annotations on the GPU timeline: they must not count as layers or steps
    ev.append(X("ProfilerStep#0", 1000, 2000, cat="gpu_user_annotation", pid=0, tid=7))
    ev.append(X("layer: a", 2000, 40, cat="gpu_user_annotation", pid=0, tid=7))
    op("aten::linear", 20, 50, [("kernel", 100), ("gpu_memcpy", 4)], **_seq(1))
    ev.append(X("layer: b", 120, 80, cat="user_annotation"))
    op("aten::relu", 130, 20, [("kernel", 7)], **_seq(4))
    op("aten::cross_entropy_loss", 210, 30, [("kernel", 11), ("kernel", 2)], **_seq(5))
    op(BWD + "NllLossBackward0", 300, 10, [("kernel", 9)], tid=2, **_seq(5))
    op(BWD + "ReluBackward0", 320, 15, [("kernel", 13)], tid=2, **_seq(4))
    op(BWD + "AddmmBackward0", 350, 40, [("kernel", 70), ("kernel", 30)], tid=2, **_seq(1))
    op(BWD + "torch::autograd::AccumulateGrad", 395, 5, [], tid=2)
    ev.append(X("torch::autograd::AccumulateGrad", 396, 3, tid=2, **{
        "Input Dims": [[4, 8]], "Input type": ["c10::Half"]}))
    return {"schemaVersion": 1, "traceEvents": ev,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


def test_gpu_oracle_counts_kernels_not_cpu_ops(tmp_path):
    p = import_kineto(_write(tmp_path, gpu_trace()), batch_size=4)
    us = 1e-6
    expected = {"fwd:a": 104, "fwd:b": 7, "fwd:loss": 13, "bwd:loss": 9, "bwd:b": 13,
                "bwd:a": 100, "upd:a": 0}
    for op_id, t in expected.items():
        assert _col(p, op_id) == pytest.approx([t * us]), op_id
    assert p.model_bytes() == 4 * 8 * 2  # half precision
    assert "H100" in p.job.device and p.extra["kineto"]["time"] == "device kernels"


# ----------------------------------------------------------------------------- errors

def _drop(trace, pred):
    trace["traceEvents"] = [e for e in trace["traceEvents"] if not pred(e)]
    return trace


def _no_shapes(trace):
    for e in trace["traceEvents"]:
        e["args"].pop("Input Dims", None)
    return trace


def _two_iterations(trace):
    ev = _drop(trace, lambda e: e["name"].startswith(("ProfilerStep", "Optimizer")))
    later = copy.deepcopy(ev["traceEvents"])
    for e in later:
        e["ts"] += 1000
    ev["traceEvents"] += later
    return ev


BAD = {
    "notjson": ("{", "not valid JSON"),
    "list": ("[1, 2]", "no traceEvents list"),
    "empty": ({"traceEvents": []}, "no complete"),
    "badts": ({"traceEvents": [{"ph": "X", "ts": "x", "dur": 1}]}, "ts is not a finite"),
    "noannotations": (_drop(cpu_trace(), lambda e: e["name"].startswith("layer:")),
                      "no layer annotations"),
    "nobackward": (_drop(cpu_trace(), lambda e: e["name"].startswith(BWD)), "no backward pass"),
    "noshapes": (_no_shapes(cpu_trace()), "record_shapes=True"),
    "noparams": (_drop(cpu_trace(), lambda e: "AccumulateGrad" in e["name"]),
                 "no parameter got a gradient"),
    "twoiterations": (_two_iterations(cpu_trace()), "several iterations in one step"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_traces_exit_2_with_one_line(tmp_path, capsys, case):
    content, message = BAD[case]
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    out = tmp_path / "out.json"
    assert main(["import", "kineto", str(path), "--batch-size", "4", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert not out.exists()
    with pytest.raises(ProfileError, match=message):
        import_kineto(path, batch_size=4)


def test_bad_gzip_and_missing_file(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(ProfileError, match="not a valid gzip file"):
        import_kineto(path, 4)
    with pytest.raises(ProfileError, match="cannot read file"):
        import_kineto(tmp_path / "missing.json", 4)
    with pytest.raises(ConfigError, match="batch size"):
        import_kineto(CNN, 0)


def test_cli_writes_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "cnn.json"
    argv = ["import", "kineto", str(CNN), "--batch-size", "8", "--no-overlap", "-o", str(out)]
    assert main(argv) == 0
    p = load_profile(out)
    assert p.job.overlap is False and p.n_steps == 3
    assert np.array_equal(p.durations_s, import_kineto(CNN, 8, overlap=False).durations_s)
    assert "wrote" in capsys.readouterr().err
    assert main(argv) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert main(argv + ["--force"]) == 0
    # the output path is checked before the trace is read
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["import", "kineto", str(bad), "--batch-size", "8", "-o",
                 str(tmp_path / "nodir" / "x.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
