"""The ``sgdsim`` command line: output formats, timeline files, and one-line errors (exit 2)."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sgdsim
from sgdsim.cli import main
from sgdsim.evaluate.margin import MODEL_ERROR_REL

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "profiles"
PROFILE = str(EXAMPLES / "alexnet-nooverlap.json")  # 68 ops: quick
GRAPH = str(Path(__file__).resolve().parent / "data" / "pipedream" / "alexnet.graph.txt")
FAST = ["--steps", "2", "--warmup", "1"]
KEYS = {"workers", "throughput", "ci_low", "ci_high", "step_time_s", "ops_simulated",
        "bottleneck", "utilization"}


def cli(capsys, *argv):
    """Run ``sgdsim argv`` in process: (exit code, stdout, stderr)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def cli_subprocess(*argv, cwd=None):
    env = dict(os.environ)
    src = str(Path(sgdsim.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", *map(str, argv)], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def assert_one_line_error(rc, out, err):
    assert rc == 2, (rc, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sgdsim: error: ")
    assert out == ""


# ----------------------------------------------------------------------------- predict output

def test_predict_json_rows_and_keys(capsys):
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1-3", "--format", "json", *FAST)
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["workers"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert KEYS <= set(r)
        assert "timeline" not in r
        assert set(r["utilization"]) == {"worker", "downlink", "uplink", "ps"}
        assert r["bottleneck"] in r["utilization"]
        assert r["ci_low"] <= r["throughput"] <= r["ci_high"]
        assert r["throughput"] > 0 and r["step_time_s"] > 0 and r["ops_simulated"] > 0
    # the CLI prints what the Python API returns
    api = sgdsim.predict(PROFILE, workers="1-3", steps=2, warmup=1)
    assert [r["throughput"] for r in rows] == [p.throughput for p in api]


@pytest.mark.parametrize("spec,expected", [("1-3", [1, 2, 3]), ("1,2,4", [1, 2, 4]),
                                           ("4", [4]), ("2,1,2", [1, 2])])
def test_predict_worker_specs(capsys, spec, expected):
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", spec, "--format", "json", *FAST)
    assert rc == 0, err
    assert [r["workers"] for r in json.loads(out)] == expected


def test_predict_csv(capsys):
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1,2,4", "--format", "csv", *FAST)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == ("workers,model,throughput,ci_low,ci_high,step_time_s,bottleneck,ops_simulated,"
                        "steps_measured,util_downlink,util_ps,util_uplink,util_worker")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["workers"]) for r in rows] == [1, 2, 4]
    rc, out_json, _ = cli(capsys, "predict", PROFILE, "--workers", "1,2,4", "--format", "json", *FAST)
    for r, j in zip(rows, json.loads(out_json)):
        assert float(r["throughput"]) == pytest.approx(j["throughput"], rel=1e-5)
        assert int(r["steps_measured"]) == j["steps_measured"] == 2 * j["workers"] * j["replications"]
        assert r["bottleneck"] == j["bottleneck"]
        assert 0.0 <= float(r["util_" + r["bottleneck"]]) <= 1.0


def test_predict_table(capsys):
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1-2", *FAST)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert "examples/s" in lines[0] and "bottleneck" in lines[0] and "95% interval" in lines[0]
    assert lines[1].split()[0] == "1" and lines[2].split()[0] == "2"
    # W = 2 async runs spread by their start offsets: a note says the ±2 % target was missed
    assert lines[3].startswith("W=2: mean known to ±") and "short of the ±2% target" in lines[3]
    assert len(lines) == 5
    assert f"the model's error (fine ±{MODEL_ERROR_REL:.1%}" in lines[4]  # what the interval holds besides the runs
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1-2", "--model-error", "0", *FAST)
    assert rc == 0 and len(out.strip().splitlines()) == 4


def test_info(capsys):
    rc, out, err = cli(capsys, "info", PROFILE)
    assert rc == 0, err
    assert "model alexnet" in out and "batch 256" in out and "overlap False" in out


# ----------------------------------------------------------------------------- timeline

def _check_trace(path: Path, n_workers: int):
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    assert slices
    for e in slices:
        assert {"name", "cat", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0
    names = {e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert {f"worker {w} (default)" for w in range(n_workers)} <= names
    assert "parameter server 0" in names
    assert any(e["name"] == "thread_name" for e in meta)
    # every slice's process is named
    pids = {e["pid"] for e in meta if e["name"] == "process_name"}
    assert {e["pid"] for e in slices} <= pids
    return slices


def test_timeline_writes_chrome_trace(capsys, tmp_path):
    target = tmp_path / "trace.json"
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "2", "--timeline", target, *FAST)
    assert rc == 0, err
    slices = _check_trace(target, 2)
    assert f"wrote {len(slices)} op slices to {target}" in err


def test_timeline_one_file_per_worker_count(capsys, tmp_path):
    target = tmp_path / "trace.json"
    rc, _, err = cli(capsys, "predict", PROFILE, "--workers", "1,3", "--timeline", target, *FAST)
    assert rc == 0, err
    assert not target.exists()
    _check_trace(tmp_path / "trace-w1.json", 1)
    _check_trace(tmp_path / "trace-w3.json", 3)


def test_timeline_refuses_to_overwrite(capsys, tmp_path):
    target = tmp_path / "trace.json"
    target.write_text("precious")
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1", "--timeline", target, *FAST)
    assert_one_line_error(rc, out, err)
    assert "refusing to overwrite" in err
    assert target.read_text() == "precious"
    rc, _, err = cli(capsys, "predict", PROFILE, "--workers", "1", "--timeline", target,
                     "--force", *FAST)
    assert rc == 0, err
    _check_trace(target, 1)


def test_timeline_refuses_to_overwrite_a_per_count_file(capsys, tmp_path):
    (tmp_path / "trace-w2.json").write_text("precious")
    rc, _, err = cli(capsys, "predict", PROFILE, "--workers", "1-2", "--timeline",
                     tmp_path / "trace.json", *FAST)
    assert rc == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("sgdsim: error: ")
    assert (tmp_path / "trace-w2.json").read_text() == "precious"


def test_timeline_refusal_writes_nothing(capsys, tmp_path):
    (tmp_path / "trace-w2.json").write_text("precious")
    rc, out, err = cli(capsys, "predict", PROFILE, "--workers", "1-2", "--timeline",
                       tmp_path / "trace.json", *FAST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace-w2.json"]
    assert_one_line_error(rc, out, err)


def test_timeline_in_missing_directory_is_one_line_error(tmp_path):
    proc = cli_subprocess("predict", PROFILE, "--workers", "1", "--timeline",
                          tmp_path / "nope" / "trace.json", *FAST)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("sgdsim: error: ")


def test_timeline_onto_a_directory_with_force_is_one_line_error(tmp_path):
    (tmp_path / "adir").mkdir()
    proc = cli_subprocess("predict", PROFILE, "--workers", "1", "--timeline", tmp_path / "adir",
                          "--force", *FAST)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2
    assert (tmp_path / "adir").is_dir()


# ----------------------------------------------------------------------------- errors

def _malformed(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"format": "sgdsim-profile", "version": 1,\n  "job": {"model": "x",,}}')
    return p


ERROR_CASES = {
    "missing profile": (lambda t: ["predict", t / "missing.json", "--workers", "1"],
                        "cannot read file"),
    "malformed json": (lambda t: ["predict", _malformed(t), "--workers", "1"], "not valid JSON"),
    "unknown bandwidth unit": (lambda t: ["predict", PROFILE, "--bandwidth", "10Gbs"],
                               "unknown bandwidth unit"),
    "zero workers": (lambda t: ["predict", PROFILE, "--workers", "0"], "at least 1"),
    "unparsable workers": (lambda t: ["predict", PROFILE, "--workers", "x"], "worker counts"),
    "async allreduce": (lambda t: ["predict", PROFILE, "--arch", "allreduce", "--mode", "async"],
                        "--arch allreduce runs --mode sync, not async"),
    "order with http2": (lambda t: ["predict", PROFILE, "--order", "tic", "--streams", "http2"],
                         "--order"),
    "bad choice": (lambda t: ["predict", PROFILE, "--sharing", "maxmin"], "invalid choice"),
    "no profile": (lambda t: ["predict", "--workers", "1"], "no profile"),
    "import missing graph": (lambda t: ["import", "pipedream", t / "missing.graph.txt",
                                        "--batch-size", "8", "-o", t / "out.json"],
                             "cannot read file"),
    "info missing": (lambda t: ["info", t / "missing.json"], "cannot read file"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_are_one_line_exit_2(capsys, tmp_path, case):
    make_argv, fragment = ERROR_CASES[case]
    argv = make_argv(tmp_path)
    rc, out, err = cli(capsys, *argv, *(FAST if argv[0] == "predict" else []))
    assert_one_line_error(rc, out, err)
    assert fragment in err


def test_import_pipedream_refuses_to_overwrite(capsys, tmp_path):
    out_path = tmp_path / "existing.json"
    out_path.write_text("precious")
    rc, out, err = cli(capsys, "import", "pipedream", GRAPH, "--batch-size", "256", "-o", out_path)
    assert_one_line_error(rc, out, err)
    assert "refusing to overwrite" in err
    assert out_path.read_text() == "precious"
    rc, _, err = cli(capsys, "import", "pipedream", GRAPH, "--batch-size", "256", "-o", out_path,
                     "--force")
    assert rc == 0, err
    assert sgdsim.load_profile(out_path).job.batch_size == 256


def test_import_pipedream_then_predict(capsys, tmp_path):
    out_path = tmp_path / "alexnet.json"
    rc, out, err = cli(capsys, "import", "pipedream", GRAPH, "--batch-size", "256",
                       "--no-overlap", "-o", out_path)
    assert rc == 0, err
    assert out == "" and f"wrote {out_path}" in err
    prof = sgdsim.load_profile(out_path)
    assert prof.job.overlap is False
    rc, out, err = cli(capsys, "predict", out_path, "--workers", "1", "--format", "json", *FAST)
    assert rc == 0, err
    b, M, C = prof.job.batch_size, prof.model_bytes(), prof.mean_compute_s()
    assert json.loads(out)[0]["throughput"] == pytest.approx(b / (2 * M / 1.25e9 + C), rel=1e-9)


def test_errors_in_a_subprocess_have_no_traceback(tmp_path):
    bad = _malformed(tmp_path)
    existing = tmp_path / "existing.json"
    existing.write_text("precious")
    for argv in (["predict", tmp_path / "missing.json"],
                 ["predict", bad, "--workers", "1"],
                 ["predict", PROFILE, "--bandwidth", "10Gbs"],
                 ["predict", PROFILE, "--workers", "0"],
                 ["predict", PROFILE, "--arch", "allreduce", "--mode", "async"],
                 ["predict", PROFILE, "--order", "tic", "--streams", "http2"],
                 ["import", "pipedream", tmp_path / "missing.graph.txt", "--batch-size", "8",
                  "-o", tmp_path / "x.json"],
                 ["import", "pipedream", GRAPH, "--batch-size", "8", "-o", existing],
                 ["predict", PROFILE, "--mode", "sideways"]):
        proc = cli_subprocess(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr, argv
        assert len(proc.stderr.splitlines()) == 1, (argv, proc.stderr)
        assert proc.stderr.startswith("sgdsim: error: ")
        assert proc.stdout == ""
    assert existing.read_text() == "precious"


def test_subprocess_predict_succeeds():
    proc = cli_subprocess("predict", PROFILE, "--workers", "1-2", "--format", "json", *FAST)
    assert proc.returncode == 0, proc.stderr
    assert [r["workers"] for r in json.loads(proc.stdout)] == [1, 2]
