"""Profile file format: round trips, atomic writes, and every validation rule."""
from __future__ import annotations

import dataclasses

import copy
import gzip
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.errors import ProfileError
from sgdsim.profile.io import (load_profile, profile_from_dict, profile_to_dict, save_profile,
                               validate_profile)
from sgdsim.profile.model import Job, Op, Profile


def small_dict() -> dict:
    """A valid two-layer profile with two steps and recorded comm timings."""
    ops = [
        {"id": "down:a", "name": "Linear", "layer": "a", "kind": "comm", "resource": "downlink",
         "ps": 0, "size_bytes": 4000, "deps": []},
        {"id": "fwd:a", "name": "Linear", "layer": "a", "kind": "compute", "resource": "worker",
         "deps": ["down:a"]},
        {"id": "fwd:b", "name": "ReLU", "layer": "b", "kind": "compute", "resource": "worker",
         "deps": ["fwd:a"]},
        {"id": "bwd:b", "name": "ReLU", "layer": "b", "kind": "compute", "resource": "worker",
         "deps": ["fwd:b"]},
        {"id": "bwd:a", "name": "Linear", "layer": "a", "kind": "compute", "resource": "worker",
         "deps": ["bwd:b"]},
        {"id": "up:a", "name": "Linear", "layer": "a", "kind": "comm", "resource": "uplink",
         "ps": 0, "size_bytes": 4000, "deps": ["bwd:a"]},
        {"id": "upd:a", "name": "Linear", "layer": "a", "kind": "compute", "resource": "ps",
         "deps": ["up:a"]},
    ]
    durations = {"fwd:a": 0.002, "fwd:b": 0.001, "bwd:b": 0.0015, "bwd:a": 0.003, "upd:a": 0.0}
    return {
        "format": "sgdsim-profile", "version": 1,
        "job": {"model": "toy", "batch_size": 32, "framework": "test", "device": "cpu",
                "bandwidth_bps": 1e9, "overlap": True, "source": "hand",
                "units": {"time": "s", "size": "bytes", "bandwidth": "bit/s"}},
        "ops": ops,
        "steps": [{"duration_s": durations, "comm_s": {"down:a": 0.01}},
                  {"duration_s": {k: v * 1.1 for k, v in durations.items()}}],
    }


def assert_same_profile(a: Profile, b: Profile) -> None:
    assert a.job == b.job
    assert a.ops == b.ops
    assert a.version == b.version
    assert a.extra == b.extra
    np.testing.assert_array_equal(a.durations_s, b.durations_s)
    if a.comm_s is None:
        assert b.comm_s is None
    else:
        np.testing.assert_array_equal(a.comm_s, b.comm_s)  # NaN == NaN here


def test_from_dict_builds_profile():
    p = profile_from_dict(small_dict(), "x.json")
    assert [op.id for op in p.ops][:3] == ["down:a", "fwd:a", "fwd:b"]  # file order kept
    assert p.durations_s.shape == (2, 7)
    assert p.durations_s[0, 0] == 0.0  # comm column
    assert p.durations_s[1, p.index()["bwd:a"]] == pytest.approx(0.0033)
    assert p.comm_s[0, 0] == 0.01 and math.isnan(p.comm_s[1, 0])
    assert math.isnan(p.comm_s[0, p.index()["fwd:a"]])
    assert p.model_bytes() == 4000
    assert p.job.bandwidth_bps == 1e9 and p.job.overlap is True
    assert p.ops[1].deps == ("down:a",) and p.ops[1].size_bytes == 0.0


def test_comm_s_is_none_when_absent():
    d = small_dict()
    del d["steps"][0]["comm_s"]
    assert profile_from_dict(d).comm_s is None


@pytest.mark.parametrize("name", ["p.json", "p.json.gz"])
def test_round_trip(tmp_path, name):
    original = profile_from_dict(small_dict())
    path = tmp_path / name
    save_profile(original, path)
    assert_same_profile(original, load_profile(path))
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")


def test_round_trip_without_comm_and_with_extra(tmp_path):
    d = small_dict()
    del d["steps"][0]["comm_s"]
    d["notes"] = {"who": "test"}
    original = profile_from_dict(d)
    assert original.extra == {"notes": {"who": "test"}}
    save_profile(original, tmp_path / "p.json")
    assert_same_profile(original, load_profile(tmp_path / "p.json"))


def test_gzip_detected_by_magic_bytes(tmp_path):
    path = tmp_path / "compressed.json"  # no .gz suffix
    path.write_bytes(gzip.compress(json.dumps(small_dict()).encode()))
    assert load_profile(path).n_ops == 7


def test_written_file_is_plain_json(tmp_path):
    save_profile(profile_from_dict(small_dict()), tmp_path / "p.json")
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["format"] == "sgdsim-profile" and data["version"] == 1
    assert data["job"]["units"] == {"time": "s", "size": "bytes", "bandwidth": "bit/s"}
    assert "duration_s" not in data["ops"][0]
    assert "down:a" not in data["steps"][0]["duration_s"]


def test_refuses_to_overwrite(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("precious")
    with pytest.raises(ProfileError, match=r"exists; refusing to overwrite \(use --force\)"):
        save_profile(profile_from_dict(small_dict()), path)
    assert path.read_text() == "precious"
    save_profile(profile_from_dict(small_dict()), path, overwrite=True)
    assert load_profile(path).n_ops == 7


def test_invalid_profile_is_never_written(tmp_path):
    p = profile_from_dict(small_dict())
    bad = Profile(job=p.job, ops=p.ops, durations_s=-p.durations_s - 1.0)
    path = tmp_path / "bad.json"
    with pytest.raises(ProfileError, match="negative"):
        save_profile(bad, path)
    assert os.listdir(tmp_path) == []  # neither the file nor a temp file


def test_unwritable_directory_is_profile_error(tmp_path):
    with pytest.raises(ProfileError, match="cannot write"):
        save_profile(profile_from_dict(small_dict()), tmp_path / "missing" / "p.json")


def test_validate_profile_catches_cycle_in_memory():
    ops = (Op("a", "a", "l", "compute", "worker", deps=("b",)),
           Op("b", "b", "l", "compute", "worker", deps=("a",)))
    p = Profile(job=Job("m", 1), ops=ops, durations_s=np.zeros((1, 2)))
    with pytest.raises(ProfileError, match="cycle"):
        validate_profile(p, "mem")


# ----------------------------------------------------------------------------- file errors

def test_missing_file(tmp_path):
    with pytest.raises(ProfileError, match=r"nope\.json: cannot read file"):
        load_profile(tmp_path / "nope.json")


@pytest.mark.parametrize("content, pattern", [
    (b"{not json", r"not valid JSON \(line 1 column 2"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b"", "not valid JSON"),
])
def test_unparsable_file(tmp_path, content, pattern):
    path = tmp_path / "f.json"
    path.write_bytes(content)
    with pytest.raises(ProfileError, match=pattern) as info:
        load_profile(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_bad_gzip(tmp_path):
    path = tmp_path / "f.json.gz"
    path.write_bytes(b"\x1f\x8bgarbage")
    with pytest.raises(ProfileError, match="not a valid gzip file"):
        load_profile(path)


# ----------------------------------------------------------------------------- validation

def _op(d, op_id):
    return next(o for o in d["ops"] if o["id"] == op_id)


def _set(path, value):
    """Mutation setting d[path...] = value; op ids in the path select ops by id."""
    def mutate(d):
        target = d
        for key in path[:-1]:
            target = _op(d, key) if isinstance(key, str) and ":" in key else target[key]
        target[path[-1]] = value
    return mutate


def _delete(path):
    def mutate(d):
        target = d
        for key in path[:-1]:
            target = _op(d, key) if isinstance(key, str) and ":" in key else target[key]
        del target[path[-1]]
    return mutate


def _append_op(op):
    return lambda d: d["ops"].append(op)


NAN, INF = float("nan"), float("inf")
CASES = {
    "no-format": (_delete(["format"]), "format is None, expected 'sgdsim-profile'"),
    "wrong-format": (_set(["format"], "other"), "format is 'other'"),
    "bad-version": (_set(["version"], 2), "version 2 is not supported"),
    "no-version": (_delete(["version"]), "version None is not supported"),
    "no-job": (_delete(["job"]), "job must be an object"),
    "no-model": (_delete(["job", "model"]), "job.model must be a non-empty string"),
    "no-batch": (_delete(["job", "batch_size"]), "job.batch_size must be an integer from 1 to"),
    "huge-batch": (_set(["job", "batch_size"], 2 ** 63), "job.batch_size must be an integer from 1 to"),
    "zero-batch": (_set(["job", "batch_size"], 0), r"job.batch_size .* \(got 0\)"),
    "float-batch": (_set(["job", "batch_size"], 1.5), "job.batch_size"),
    "bool-batch": (_set(["job", "batch_size"], True), "job.batch_size"),
    "bad-bandwidth": (_set(["job", "bandwidth_bps"], -1), "job.bandwidth_bps"),
    "bad-overlap": (_set(["job", "overlap"], "yes"), "job.overlap"),
    "job-unknown": (_set(["job", "batchsize"], 3), "job has unknown field 'batchsize'"),
    "ms-units": (_set(["job", "units", "time"], "ms"), "job.units.time is 'ms'"),
    "bits-units": (_set(["job", "units", "size"], "bits"), "job.units.size is 'bits'"),
    "ops-missing": (_delete(["ops"]), "ops must be a non-empty list"),
    "ops-empty": (_set(["ops"], []), "ops must be a non-empty list"),
    "ops-not-list": (_set(["ops"], {}), "ops must be a non-empty list"),
    "op-no-id": (_delete(["ops", 2, "id"]), r"ops\[2\]: id is missing"),
    "dup-id": (_set(["ops", 2, "id"], "fwd:a"), r"op 'fwd:a': id is duplicated \(ops\[2\]\)"),
    "unknown-kind": (_set(["fwd:a", "kind"], "magic"), "op 'fwd:a': kind 'magic' is unknown"),
    "unknown-resource": (_set(["fwd:a", "resource"], "gpu"),
                         "op 'fwd:a': resource 'gpu' is unknown"),
    "comm-on-worker": (_set(["down:a", "resource"], "worker"),
                       "op 'down:a': resource 'worker' does not match kind 'comm'"),
    "compute-on-link": (_set(["fwd:a", "resource"], "uplink"),
                        "op 'fwd:a': resource 'uplink' does not match kind 'compute'"),
    "size-missing": (_delete(["up:a", "size_bytes"]), "op 'up:a': size_bytes is missing"),
    "size-negative": (_set(["up:a", "size_bytes"], -5), r"op 'up:a': size_bytes is negative"),
    "size-nan": (_set(["up:a", "size_bytes"], NAN), "op 'up:a': size_bytes is NaN"),
    "size-inf": (_set(["up:a", "size_bytes"], INF), "op 'up:a': size_bytes is not finite"),
    "size-string": (_set(["up:a", "size_bytes"], "4kB"), "op 'up:a': size_bytes is not a number"),
    "size-on-compute": (_set(["fwd:a", "size_bytes"], 10), "op 'fwd:a': size_bytes is only"),
    "negative-ps": (_set(["up:a", "ps"], -1), "op 'up:a': ps must be an integer from 0 to 1023"),
    "huge-ps": (_set(["up:a", "ps"], 10 ** 30), "op 'up:a': ps must be an integer from 0 to 1023"),
    "unknown-op-field": (_set(["fwd:a", "dep"], []), "op 'fwd:a': unknown field 'dep'"),
    "deps-not-list": (_set(["fwd:a", "deps"], "down:a"), "op 'fwd:a': deps must be a list"),
    "dangling": (_set(["fwd:b", "deps"], ["fwd:zz"]), "op 'fwd:b': deps names unknown op 'fwd:zz'"),
    "dup-dep": (_set(["fwd:b", "deps"], ["fwd:a", "fwd:a"]), "op 'fwd:b': deps lists 'fwd:a' twice"),
    "self-cycle": (_set(["fwd:b", "deps"], ["fwd:b"]),
                   r"op 'fwd:b': deps form a cycle \(fwd:b -> fwd:b\)"),
    "cycle": (_set(["fwd:a", "deps"], ["bwd:a"]), r"deps form a cycle \(.*fwd:a.*\)"),
    "steps-missing": (_delete(["steps"]), "steps must be a non-empty list"),
    "steps-empty": (_set(["steps"], []), "steps must be a non-empty list"),
    "step-no-durations": (_delete(["steps", 1, "duration_s"]), "step 1 duration_s must be"),
    "duration-missing": (_delete(["steps", 1, "duration_s", "bwd:b"]),
                         "op 'bwd:b': step 1 duration_s is missing"),
    "duration-negative": (_set(["steps", 1, "duration_s", "fwd:b"], -1.0),
                          r"op 'fwd:b': step 1 duration_s is negative \(-1.0\)"),
    "duration-nan": (_set(["steps", 0, "duration_s", "fwd:b"], NAN),
                     "op 'fwd:b': step 0 duration_s is NaN"),
    "duration-inf": (_set(["steps", 0, "duration_s", "fwd:b"], INF),
                     "op 'fwd:b': step 0 duration_s is not finite"),
    "duration-string": (_set(["steps", 0, "duration_s", "fwd:b"], "1ms"),
                        "op 'fwd:b': step 0 duration_s is not a number"),
    "duration-null": (_set(["steps", 0, "duration_s", "fwd:b"], None),
                      "op 'fwd:b': step 0 duration_s is not a number"),
    "duration-unknown-op": (_set(["steps", 0, "duration_s", "fwd:q"], 0.1),
                            "op 'fwd:q': step 0 duration_s given for an unknown op"),
    "duration-for-comm": (_set(["steps", 0, "duration_s", "down:a"], 0.1),
                          "op 'down:a': step 0 duration_s given for a comm op"),
    "comm-negative": (_set(["steps", 0, "comm_s", "down:a"], -0.5),
                      "op 'down:a': step 0 comm_s is negative"),
    "comm-unknown-op": (_set(["steps", 0, "comm_s", "down:q"], 0.5),
                        "op 'down:q': step 0 comm_s given for an unknown op"),
    "comm-for-compute": (_set(["steps", 0, "comm_s", "fwd:a"], 0.5),
                         "op 'fwd:a': step 0 comm_s given for a compute op"),
    "step-unknown-field": (_set(["steps", 0, "durations"], {}), "step 0 has unknown field"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validation_error(tmp_path, case):
    mutate, pattern = CASES[case]
    d = small_dict()
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))  # NaN/Infinity are written as JSON extensions on purpose
    with pytest.raises(ProfileError, match=pattern) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(f"profile {path}: ")
    assert "\n" not in message


def test_cycle_message_names_an_op_on_the_cycle():
    d = small_dict()
    d["ops"].append({"id": "x", "kind": "compute", "resource": "worker", "deps": ["y"]})
    d["ops"].append({"id": "y", "kind": "compute", "resource": "worker", "deps": ["x"]})
    d["ops"].append({"id": "z", "kind": "compute", "resource": "worker", "deps": ["y"]})
    for step in d["steps"]:
        step["duration_s"].update(x=0.0, y=0.0, z=0.0)
    with pytest.raises(ProfileError, match=r"op '(x|y)': deps form a cycle"):
        profile_from_dict(d, "c.json")


@pytest.mark.parametrize("doc", [[1], None, "text"])
def test_top_level_must_be_object(doc):
    with pytest.raises(ProfileError, match="^profile t.json: top level must be a JSON object"):
        profile_from_dict(doc, "t.json")


def test_comm_null_means_not_recorded():
    d = small_dict()
    d["steps"][1]["comm_s"] = {"down:a": None, "up:a": 0.02}
    p = profile_from_dict(d)
    assert math.isnan(p.comm_s[1, 0]) and p.comm_s[1, p.index()["up:a"]] == 0.02


def test_float_version_and_defaults_accepted():
    d = small_dict()
    d["version"] = 1.0
    del d["job"]["units"], d["job"]["framework"], d["ops"][1]["name"], d["ops"][1]["layer"]
    p = profile_from_dict(d)
    assert p.version == 1 and p.job.framework == "unknown"
    assert p.ops[1].name == "fwd:a" and p.ops[1].layer == ""


# ----------------------------------------------------------------------------- property

@st.composite
def random_profiles(draw):
    n = draw(st.integers(1, 12))
    ops = []
    for i in range(n):
        comm = draw(st.booleans())
        deps = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        ops.append(Op(id=f"op{i}", name=f"n{i}", layer=f"l{i % 3}",
                      kind="comm" if comm else "compute",
                      resource=draw(st.sampled_from(["downlink", "uplink"] if comm
                                                    else ["worker", "ps"])),
                      deps=tuple(f"op{j}" for j in sorted(deps)), ps=draw(st.integers(0, 2)),
                      size_bytes=float(draw(st.integers(0, 10**9))) if comm else 0.0))
    rank = {ps: i for i, ps in enumerate(sorted({op.ps for op in ops}))}  # servers 0..K-1
    ops = [dataclasses.replace(op, ps=rank[op.ps]) for op in ops]
    steps = draw(st.integers(1, 3))
    finite = st.floats(0, 10, allow_nan=False)
    durations = np.array([[0.0 if op.kind == "comm" else draw(finite) for op in ops]
                          for _ in range(steps)])
    return Profile(job=Job("m", draw(st.integers(1, 4096))), ops=tuple(ops),
                   durations_s=durations)


@settings(max_examples=40, deadline=None)
@given(random_profiles())
def test_dict_round_trip_property(profile):
    again = profile_from_dict(json.loads(json.dumps(profile_to_dict(profile))))
    assert_same_profile(profile, again)


def test_to_dict_does_not_share_state():
    p = profile_from_dict(small_dict())
    d1 = profile_to_dict(p)
    d2 = copy.deepcopy(d1)
    d1["ops"][0]["deps"].append("zzz")
    assert profile_to_dict(p) == d2


def test_wrong_duration_shape_is_profile_error(tmp_path):
    p = profile_from_dict(small_dict())
    bad = Profile(job=p.job, ops=p.ops, durations_s=np.zeros((1, 3)))
    with pytest.raises(ProfileError, match=r"durations_s has shape \(1, 3\), expected \(steps, 7\)"):
        save_profile(bad, tmp_path / "p.json")


def test_a_gap_in_the_server_numbers_is_refused(tmp_path):
    """"ps": 1000 on one op would otherwise count 1001 servers, 999 of them empty."""
    data = json.loads(open("examples/profiles/alexnet.json").read())
    comm = next(op for op in data["ops"] if op["kind"] == "comm")
    comm["ps"] = 1000
    with pytest.raises(ProfileError, match=r"ps 1000 leaves parameter server 1 with nothing"):
        profile_from_dict(data)
