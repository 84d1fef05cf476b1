"""PipeDream graph.txt importer: exact ops on a toy graph, totals against the published summary."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from sgdsim.errors import ConfigError, ProfileError
from sgdsim.profile.io import load_profile
from sgdsim.profile.pipedream import import_pipedream

DATA = Path(__file__).parent / "data" / "pipedream"
EXAMPLES = Path(__file__).parent.parent / "examples" / "profiles"
MODELS = {"alexnet": 256, "vgg16": 128, "resnet50": 128, "inception_v3": 128}


def _node(n, layer, fwd_ms, bwd_ms, param_bytes):
    return (f"node{n} -- {layer} -- forward_compute_time={fwd_ms:.3f}, "
            f"backward_compute_time={bwd_ms:.3f}, activation_size=1024.000, "
            f"parameter_size={param_bytes:.3f}")


# Input -> Conv (params) -> ReLU -> Linear (params), plus a skip edge Conv -> Linear.
# Node lines are shuffled like PipeDream's own files; edges come last, tab-indented.
TOY = "\n".join([
    _node(3, "ReLU(inplace)", 0.5, 0.25, 0),
    _node(1, "Input", 100.0, 0.0, 0),
    _node(4, "Linear(in_features=8, out_features=2, bias=True)", 2.0, 3.0, 400),
    _node(2, "Conv2d(3, 8, kernel_size=(3, 3))", 1.5, 4.0, 1000),
    "\tnode1 -- node2", "\tnode2 -- node3", "\tnode3 -- node4", "\tnode2 -- node4",
]) + "\n"


@pytest.fixture
def toy(tmp_path) -> Path:
    path = tmp_path / "toy.graph.txt"
    path.write_text(TOY)
    return path


def _structure(profile):
    return [(op.id, op.kind, op.resource, op.deps) for op in profile.ops]


def test_toy_graph_with_overlap(toy):
    p = import_pipedream(toy, batch_size=4, overlap=True, update_s_per_mb=0.5)
    assert _structure(p) == [
        ("down:node2", "comm", "downlink", ()),
        ("down:node4", "comm", "downlink", ()),
        ("fwd:node2", "compute", "worker", ("down:node2",)),
        ("fwd:node3", "compute", "worker", ("fwd:node2",)),
        ("fwd:node4", "compute", "worker", ("down:node4", "fwd:node2", "fwd:node3")),
        ("bwd:node4", "compute", "worker", ("fwd:node4",)),
        ("bwd:node3", "compute", "worker", ("bwd:node4",)),
        ("bwd:node2", "compute", "worker", ("bwd:node3", "bwd:node4")),
        ("up:node4", "comm", "uplink", ("bwd:node4",)),
        ("up:node2", "comm", "uplink", ("bwd:node2",)),
        ("upd:node4", "compute", "ps", ("up:node4",)),
        ("upd:node2", "compute", "ps", ("up:node2",)),
    ]
    expected_s = [0, 0, 0.0015, 0.0005, 0.002, 0.003, 0.00025, 0.004, 0, 0,
                  0.5 * 400 / 1e6, 0.5 * 1000 / 1e6]
    np.testing.assert_allclose(p.durations_s, [expected_s], rtol=0, atol=1e-15)
    sizes = {op.id: op.size_bytes for op in p.ops if op.kind == "comm"}
    assert sizes == {"down:node2": 1000, "down:node4": 400, "up:node4": 400, "up:node2": 1000}
    assert all(op.ps == 0 for op in p.ops)
    ops = {op.id: op for op in p.ops}
    assert ops["fwd:node2"].layer == "node2" and ops["fwd:node2"].name.startswith("Conv2d")
    assert p.job.model == "toy" and p.job.batch_size == 4 and p.job.overlap is True
    assert p.job.source == "toy.graph.txt" and p.job.bandwidth_bps is None
    assert p.job.framework == "pytorch (PipeDream profiler)"
    assert p.n_steps == 1 and p.comm_s is None


def test_toy_graph_without_overlap(toy):
    p = import_pipedream(toy, batch_size=4, overlap=False, model_name="tiny")
    deps = {op.id: op.deps for op in p.ops}
    assert [op.id for op in p.ops] == [
        "down:node2", "down:node4", "fwd:node2", "fwd:node3", "fwd:node4",
        "bwd:node4", "bwd:node3", "bwd:node2", "up:node4", "up:node2", "upd:node4", "upd:node2"]
    assert deps["fwd:node2"] == ("down:node2", "down:node4")
    assert deps["fwd:node4"] == ("fwd:node2", "fwd:node3")
    assert deps["up:node4"] == deps["up:node2"] == ("bwd:node2",)
    assert p.job.model == "tiny" and p.job.overlap is False
    assert p.durations_s[0, -1] == 0.0  # update_s_per_mb defaults to 0


def test_sink_backwards_wait_for_every_output(tmp_path):
    path = tmp_path / "two_heads.graph.txt"
    path.write_text("\n".join([
        _node(1, "Input", 1, 0, 0), _node(2, "Linear(a)", 1, 1, 8),
        _node(3, "Linear(b)", 1, 1, 0), _node(4, "Linear(c)", 1, 1, 0),
        "\tnode1 -- node2", "\tnode2 -- node3", "\tnode2 -- node4"]))
    deps = {op.id: op.deps for op in import_pipedream(path, 1).ops}
    assert deps["bwd:node3"] == deps["bwd:node4"] == ("fwd:node3", "fwd:node4")
    assert deps["bwd:node2"] == ("bwd:node3", "bwd:node4")


def test_model_name_from_pipedream_layout(tmp_path):
    (tmp_path / "vgg19").mkdir()
    path = tmp_path / "vgg19" / "graph.txt"
    path.write_text(TOY)
    assert import_pipedream(path, 1).job.model == "vgg19"


# ----------------------------------------------------------------------------- malformed files

BAD_GRAPHS = {
    "garbage": (TOY + "this is not a graph line\n", 9, "cannot parse"),
    "unknown-edge-node": (TOY + "\tnode4 -- node9\n", 9, "unknown node 'node9'"),
    "negative-time": (TOY.replace("forward_compute_time=0.500", "forward_compute_time=-0.500"),
                      1, "forward_compute_time must be a non-negative number"),
    "nan-size": (TOY.replace("parameter_size=400.000", "parameter_size=nan"),
                 3, "parameter_size must be a non-negative number"),
    "non-numeric": (TOY.replace("backward_compute_time=3.000", "backward_compute_time=abc"),
                    3, "'abc' is not a number"),
    "duplicate-node": (TOY.replace("\tnode1", _node(3, "ReLU", 1, 1, 0) + "\n\tnode1", 1),
                       5, "node 'node3' defined twice"),
    "cycle": (TOY + "\tnode4 -- node3\n", None, "edges form a cycle"),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
def test_malformed_graph(tmp_path, case):
    text, line, pattern = BAD_GRAPHS[case]
    path = tmp_path / "bad.graph.txt"
    path.write_text(text)
    with pytest.raises(ProfileError, match=pattern) as info:
        import_pipedream(path, 8)
    message = str(info.value)
    assert message.startswith(f"pipedream graph {path}: line ") and "\n" not in message
    if line is not None:
        assert f": line {line}: " in message


def test_cycle_names_an_edge_line_on_the_cycle(tmp_path):
    path = tmp_path / "c.graph.txt"
    path.write_text(TOY + "\tnode4 -- node3\n")  # cycle node3 -> node4 -> node3: lines 7, 9
    with pytest.raises(ProfileError, match=r"line (7|9): edges form a cycle"):
        import_pipedream(path, 8)


def test_only_input_nodes(tmp_path):
    path = tmp_path / "empty.graph.txt"
    path.write_text(_node(1, "Input", 1, 0, 0) + "\n")
    with pytest.raises(ProfileError, match="no layers"):
        import_pipedream(path, 8)


def test_missing_graph_file(tmp_path):
    with pytest.raises(ProfileError, match="cannot read file"):
        import_pipedream(tmp_path / "nope.graph.txt", 8)


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"batch_size": 2.5},
                                    {"batch_size": 8, "update_s_per_mb": -1.0}])
def test_bad_arguments(toy, kwargs):
    with pytest.raises(ConfigError):
        import_pipedream(toy, **kwargs)


# ----------------------------------------------------------------------------- real models

def _summary() -> dict[str, dict[str, str]]:
    with open(DATA / "summary_noinput.csv", newline="") as fh:
        return {row["model"]: row for row in csv.DictReader(fh)}


def _layer_count(path: Path) -> int:
    lines = path.read_text().splitlines()
    return sum(1 for ln in lines if ln.startswith("node") and " -- Input" not in ln)


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    name = request.param
    path = DATA / f"{name}.graph.txt"
    return {"name": name, "path": path, "summary": _summary()[name],
            "overlap": import_pipedream(path, MODELS[name], overlap=True),
            "plain": import_pipedream(path, MODELS[name], overlap=False)}


def _ids(profile, prefix):
    return [op.id for op in profile.ops if op.id.startswith(prefix)]


def test_op_count_matches_summary(model):
    layers = _layer_count(model["path"])
    with_params = int(model["summary"]["layers_with_params"])
    for p in (model["overlap"], model["plain"]):
        assert p.n_ops == 2 * layers + 3 * with_params
        assert len(_ids(p, "down:")) == len(_ids(p, "up:")) == len(_ids(p, "upd:")) == with_params
        assert len(_ids(p, "fwd:")) == len(_ids(p, "bwd:")) == layers


def test_totals_match_summary(model):
    row, p = model["summary"], model["overlap"]
    assert p.model_bytes() / 1e6 == pytest.approx(float(row["param_MB_fp32"]), abs=1e-3)
    up_bytes = sum(op.size_bytes for op in p.ops if op.resource == "uplink")
    assert up_bytes == p.model_bytes()
    index = p.index()
    fwd_s = sum(p.durations_s[0, index[i]] for i in _ids(p, "fwd:"))
    bwd_s = sum(p.durations_s[0, index[i]] for i in _ids(p, "bwd:"))
    assert fwd_s == pytest.approx(float(row["fwd_ms_excl_input"]) / 1000, abs=1e-6)
    assert bwd_s == pytest.approx(float(row["bwd_ms_excl_input"]) / 1000, abs=1e-6)
    assert p.mean_compute_s() == pytest.approx(fwd_s + bwd_s)
    assert p.mean_compute_s("ps") == 0.0


def test_job_metadata(model):
    for p, overlap in ((model["overlap"], True), (model["plain"], False)):
        assert p.job.model == model["name"] and p.job.batch_size == MODELS[model["name"]]
        assert p.job.overlap is overlap and p.job.source == f"{model['name']}.graph.txt"


def _topological_ok(profile) -> bool:
    """Ops may be listed in any order; check the deps alone form a DAG (Kahn)."""
    deps = {op.id: set(op.deps) for op in profile.ops}
    done: set[str] = set()
    while len(done) < len(deps):
        ready = {i for i, d in deps.items() if i not in done and d <= done}
        if not ready:
            return False
        done |= ready
    return True


def test_dag_is_acyclic_and_closed(model):
    for p in (model["overlap"], model["plain"]):
        assert _topological_ok(p)
        ids = set(p.index())
        assert all(set(op.deps) <= ids for op in p.ops)


def test_no_overlap_structure(model):
    p = model["plain"]
    downs = set(_ids(p, "down:"))
    bwd_deps = {d for op in p.ops if op.id.startswith("bwd:") for d in op.deps}
    terminal_bwd = {i for i in _ids(p, "bwd:") if i not in bwd_deps}
    assert downs and terminal_bwd
    roots = 0
    for op in p.ops:
        if op.id.startswith("fwd:"):
            if any(d.startswith("fwd:") for d in op.deps):
                assert not any(d.startswith("down:") for d in op.deps)
            else:
                roots += 1
                assert set(op.deps) == downs  # the whole model arrives before compute starts
        if op.id.startswith("up:"):
            assert set(op.deps) == terminal_bwd  # nothing is sent before backward is over
    assert roots >= 1


def test_overlap_structure(model):
    p = model["overlap"]
    deps = {op.id: op.deps for op in p.ops}
    for op in p.ops:
        kind, layer = op.id.split(":")
        if kind == "fwd":
            assert (f"down:{layer}" in op.deps) == (f"down:{layer}" in deps)
            assert all(d == f"down:{layer}" or d.startswith("fwd:") for d in op.deps)
        elif kind == "up":
            assert op.deps == (f"bwd:{layer}",)
        elif kind == "upd":
            assert op.deps == (f"up:{layer}",)
        elif kind == "down":
            assert op.deps == ()


def test_forward_deps_follow_graph_and_backward_reverses_it(model):
    p = model["overlap"]
    deps = {op.id: op.deps for op in p.ops}
    for op_id, d in deps.items():
        if op_id.startswith("fwd:"):
            for pred in (x for x in d if x.startswith("fwd:")):
                # edge pred -> layer in forward means bwd(pred) waits for bwd(layer)
                assert f"bwd:{op_id[4:]}" in deps[f"bwd:{pred[4:]}"]


def test_op_order(model):
    kinds = [op.id.split(":")[0] for op in model["overlap"].ops]
    groups = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert groups == ["down", "fwd", "bwd", "up", "upd"]
    p = model["overlap"]
    fwd_layers = [i[4:] for i in _ids(p, "fwd:")]
    assert [i[4:] for i in _ids(p, "bwd:")] == fwd_layers[::-1]
    assert [i[5:] for i in _ids(p, "down:")] == [n for n in fwd_layers if f"down:{n}" in p.index()]
    assert [i[3:] for i in _ids(p, "up:")] == [i[4:] for i in _ids(p, "upd:")]


@pytest.mark.parametrize("suffix, overlap", [("", True), ("-nooverlap", False)])
def test_example_profiles_are_current(model, suffix, overlap):
    stored = load_profile(EXAMPLES / f"{model['name']}{suffix}.json")
    fresh = model["overlap"] if overlap else model["plain"]
    assert stored.job == fresh.job and stored.ops == fresh.ops
    np.testing.assert_array_equal(stored.durations_s, fresh.durations_s)
