"""Malformed invocations from issue 10 and from fuzzing: each keeps the contract of
``fuzzkit`` (one-line error, exit 2, no hang, nothing overwritten)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzkit import (BASE, BIG_INT, GRAPH, PROFILE, ROOT, TINY, check_contract, contract,
                     one_line_error)

# ----------------------------------------------------------------------------- corpus

def _nested(t: Path) -> Path:
    p = t / "nested.json"
    p.write_text("[" * 100000)
    return p


def _non_utf8_csv(t: Path) -> Path:
    p = t / "measured.csv"
    p.write_bytes(b"workers,throughput\n1,9.27\n2,\xff\xfe13.4\n")
    return p


def _ps_1000(t: Path) -> Path:
    tree = copy.deepcopy(BASE)
    op = next(o for o in tree["ops"] if o["resource"] in ("downlink", "uplink", "ps"))
    op["ps"] = 1000
    p = t / "ps1000.json"
    p.write_text(json.dumps(tree))
    return p


def _existing_dir(t: Path) -> Path:
    d = t / "existing"
    d.mkdir()
    return d


P = PROFILE
# id -> argv builder (tmp_path -> argv). Every one must exit 2 with one stderr line.
CORPUS = {
    "seed -1": lambda t: ["predict", P, "--workers", "2", "--seed", "-1", *TINY],
    "seed 2^64": lambda t: ["predict", P, "--workers", "2", "--seed", "18446744073709551616", *TINY],
    "bandwidth 1e-300bps": lambda t: ["predict", P, "--workers", "2", "--bandwidth", "1e-300bps",
                                      *TINY],
    "100000 nested [": lambda t: ["predict", _nested(t), "--workers", "2", *TINY],
    "100000 nested [ info": lambda t: ["info", _nested(t)],
    "calibrate-threshold non-UTF-8 CSV": lambda t: ["calibrate-threshold", _non_utf8_csv(t), P],
    "workers 1-99999999999999": lambda t: ["predict", P, "--workers", "1-99999999999999", *TINY],
    "workers 99999999999999999999": lambda t: ["predict", P, "--workers", BIG_INT, *TINY],
    "overhead-alpha nan": lambda t: ["predict", P, "--workers", "2", "--overhead-alpha", "nan",
                                     *TINY],
    "overhead-alpha inf": lambda t: ["predict", P, "--workers", "2", "--overhead-alpha", "inf",
                                     *TINY],
    "overhead-beta 1e308s": lambda t: ["predict", P, "--workers", "2", "--overhead-beta",
                                       "1e308s", *TINY],
    "rho-threshold nan": lambda t: ["predict", P, "--workers", "2", "--rho-threshold", "nan",
                                    "--model", "coarse"],
    "rho-threshold -1": lambda t: ["predict", P, "--workers", "2", "--rho-threshold", "-1",
                                   "--model", "coarse"],
    "rho-threshold 2": lambda t: ["predict", P, "--workers", "2", "--rho-threshold", "2",
                                  "--model", "coarse"],
    "bandwidth empty": lambda t: ["predict", P, "--workers", "2", "--bandwidth", "", *TINY],
    "workers 1-": lambda t: ["predict", P, "--workers", "1-", *TINY],
    "coarse without units": lambda t: ["predict", "--coarse", "fwd=182,bwd=261,size=10MB,batch=32",
                                       "--workers", "2", *TINY],
    "coarse duplicate key": lambda t: ["predict", "--coarse",
                                       "size=10MB,fwd=182ms,bwd=261ms,batch=32,fwd=100ms",
                                       "--workers", "2", *TINY],
    "ps 1000 on one op predict": lambda t: ["predict", _ps_1000(t), "--workers", "2", *TINY],
    "allreduce sync sharing fcfs": lambda t: ["predict", P, "--workers", "2", "--arch", "allreduce",
                                              "--mode", "sync", "--sharing", "fcfs", *TINY],
    "allreduce sync streams http2": lambda t: ["predict", P, "--workers", "2", "--arch",
                                               "allreduce", "--mode", "sync", "--streams", "http2",
                                               *TINY],
    "fcfs-weight in async": lambda t: ["predict", P, "--workers", "2", "--fcfs-weight", "0.3",
                                       *TINY],
    "rho-threshold with the fine model": lambda t: ["predict", P, "--workers", "2",
                                                    "--rho-threshold", "0.5", *TINY],
    "worker-profile count 100000": lambda t: ["predict", "--worker-profile", f"a={P}:100000",
                                              "--steps", "3", "--warmup", "0", "--replications",
                                              "1", "--jobs", "1"],
    "workers 100000": lambda t: ["predict", P, "--workers", "100000", *TINY],
    "workers 5000": lambda t: ["predict", P, "--workers", "5000", *TINY],
    "import onto an existing folder with --force": lambda t: [
        "import", "pipedream", GRAPH, "--batch-size", "8", "-o", _existing_dir(t), "--force"],
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_corpus_is_a_one_line_error(capsys, tmp_path, case):
    argv = CORPUS[case](tmp_path)
    one_line_error(capsys, argv)
    if case.startswith("import"):
        assert (tmp_path / "existing").is_dir()


def test_ps_1000_on_one_op_info(capsys, tmp_path):
    # Today: exit 2, "op 'down:node2': ps 1000 leaves parameter server 1 with nothing (number
    # the servers 0..K-1 without gaps)". What must never happen: "over 1001 PS" in the summary.
    argv = ["info", _ps_1000(tmp_path)]
    rc, out, err = contract(capsys, argv)
    assert "1001 PS" not in out
    assert rc == 2, out


def test_netbench_into_a_missing_folder_fails_before_measuring(capsys, tmp_path, monkeypatch):
    import sgdsim.lab.netbench as netbench

    def never(*args, **kwargs):
        raise AssertionError("the measurement started before the output was checked")

    monkeypatch.setattr(netbench, "run_local", never)
    one_line_error(capsys, ["netbench", "--local", "-o", tmp_path / "nodir" / "hw.json"],
                   seconds=10)
    assert not (tmp_path / "nodir").exists()


# Found by tools/fuzz_cli.py and by hand while writing this module. Same contract.
FOUND = {
    # was: ValueError (int max str digits) escapes tagged_json.parse_json
    "profile with a 5000-digit number": lambda t: ["info", _write(
        t, "digits.json", json.dumps(BASE).replace('"batch_size": 256',
                                                    '"batch_size": 1' + "0" * 5000))],
    # was: UnicodeDecodeError from the layers CSV reader of optimize
    "optimize non-UTF-8 layers CSV": lambda t: ["optimize", _non_utf8_csv(t), "--machines", "2",
                                                "--cores", "1", "--batch-size", "8"],
    "optimize batch-size 0": lambda t: ["optimize", "alexnet", "--machines", "2", "--cores",
                                        "1", "--batch-size", "0"],  # was: exit 0
    # was: exit 0 with nan/inf rows (examples/s nan, step time inf ms): a compute op of
    # 1e300 s is a valid profile, and sync PS overflows (sim/simulate.py:258 warns too)
    "compute duration 1e300 s, sync": lambda t: ["predict", _slow_profile(t), "--mode", "sync",
                                                 "--workers", "1,2", *TINY],
    # was: ZeroDivisionError in analytic/mva.py symmetric_sweep (async coarse, lin),
    # analytic/sync.py _result (sync coarse), analytic/baselines.py cynthia: a profile whose
    # durations and sizes are all 0 (the simulator refuses it: "a step takes no time")
    "all zero, coarse async": lambda t: ["predict", _zero_profile(t), "--model", "coarse",
                                         "--workers", "1,3"],
    "all zero, coarse sync": lambda t: ["predict", _zero_profile(t), "--model", "coarse",
                                        "--mode", "sync", "--workers", "1,3"],
    "all zero, cynthia": lambda t: ["predict", _zero_profile(t), "--model", "cynthia",
                                    "--workers", "1,3"],
    # was: ZeroDivisionError in analytic/sync.py _result (one all-reduce rank sends nothing,
    # and a profile without compute leaves a step of no time); found by tools/fuzz_cli.py
    "no compute, one all-reduce rank, coarse": lambda t: ["predict", _no_compute_profile(t),
                                                          "--mode", "sync", "--arch", "allreduce",
                                                          "--model", "coarse", "--workers", "1,3"],
    # was: OverflowError in analytic/async_ps.py async_ps_sweep (K * batch_size as a C
    # long): job.batch_size 2^63 is accepted by the loader
    "batch_size 2^63, coarse": lambda t: ["predict", _write(
        t, "b.json", json.dumps({**BASE, "job": {**BASE["job"], "batch_size": 2 ** 63}})),
        "--model", "coarse", "--workers", "2"],
    # was: exit 0 with a "[0.0, inf]" interval (JSON: "ci_high": Infinity, not JSON):
    # one measured step in one replication has no spread (sim/stats.py gives inf for fewer
    # than two values; replicate.py _from_result passes it through)
    "one step, one replication": lambda t: ["predict", PROFILE, "--workers", "1,2", "--steps",
                                            "1", "--warmup", "0", "--replications", "1",
                                            "--jobs", "1", "--format", "json"],
    # was: exit 0 with cost/epoch "inf" in the finalists table (4 nodes x 1e308 per
    # node-hour overflows); plan/cli.py accepts any finite --price-per-node-hour
    "plan price 1e308": lambda t: ["plan", PROFILE, "--dataset-size", "1000", "--workers", "1-4",
                                   "--finalists", "1", "--jobs", "1", "--price-per-node-hour",
                                   "1e308"],
    # was: OverflowError in analytic/async_ps.py async_ps_sweep (np.int64 of the count)
    "calibrate-threshold 1e20 workers": lambda t: ["calibrate-threshold", _write(
        t, "m.csv", f"workers,throughput\n{BIG_INT},10\n"), PROFILE],
    # was exit 0 with a table of nan (read_measured accepted an infinite throughput); passes
    # since 7effdda
    "calibrate-threshold inf throughput": lambda t: ["calibrate-threshold", _write(
        t, "m.csv", "workers,throughput\n1,inf\n2,10\n"), PROFILE],
    # was: ValueError in analytic/mva.py _matrix (service times of inf; found by fuzz seed 4)
    "calibrate-threshold 1e-300bps": lambda t: ["calibrate-threshold", _write(
        t, "m.csv", "workers,throughput\n1,9\n2,10\n"), PROFILE, "--bandwidth", "1e-300bps"],
}


def _write(t: Path, name: str, text: str) -> Path:
    p = t / name
    p.write_text(text)
    return p


def _zero_profile(t: Path) -> Path:
    tree = copy.deepcopy(BASE)
    tree["steps"][0]["duration_s"] = {k: 0.0 for k in tree["steps"][0]["duration_s"]}
    for op in tree["ops"]:
        if op["kind"] == "comm":
            op["size_bytes"] = 0
    return _write(t, "zero.json", json.dumps(tree))


def _no_compute_profile(t: Path) -> Path:
    tree = copy.deepcopy(BASE)
    tree["steps"][0]["duration_s"] = {k: 0.0 for k in tree["steps"][0]["duration_s"]}
    return _write(t, "no-compute.json", json.dumps(tree))


def _slow_profile(t: Path) -> Path:
    tree = copy.deepcopy(BASE)
    tree["steps"][0]["duration_s"]["fwd:node2"] = 1e300
    return _write(t, "slow.json", json.dumps(tree))


@pytest.mark.parametrize("case", list(FOUND))
def test_found_by_fuzzing_is_a_one_line_error(capsys, tmp_path, case):
    one_line_error(capsys, FOUND[case](tmp_path))


@pytest.mark.parametrize("argv", [
    # was a MemoryError (an n x n matrix of 99999^2 floats) in scaling/search.py fractions;
    # passes since 7bd5280 (--machines limited to 256)
    ["optimize", "alexnet", "--machines", "100000", "--cores", "1"],
    # was a hang (minutes) in the KDD optimizer's search; passes since 7bd5280
    ["optimize", "alexnet", "--machines", "1000", "--cores", "2"],
    # was: plan simulates a 100000-worker finalist (hangs)
    ["plan", PROFILE, "--dataset-size", "1000", "--workers", "100000", "--finalists", "1",
     "--jobs", "1"],
    # was: profile/io.py _check_ps_numbering builds set(range(max ps + 1)): a 30-digit
    # "ps" on one op hangs the loader (info, predict, everything)
    ["info", "{huge_ps}"],
], ids=["optimize 100000 machines", "optimize 1000 machines", "plan 100000 workers",
        "profile with a 30-digit ps"])
def test_big_numbers_answer_quickly(tmp_path, argv):
    # A subprocess: the simulator runs replications in threads and numpy in C, which an alarm
    # in this process cannot stop, so a hang here would hold the whole test run.
    tree = copy.deepcopy(BASE)
    tree["ops"][24]["ps"] = 123456789012345678901234567890
    huge_ps = _write(tmp_path, "huge_ps.json", json.dumps(tree))
    argv = [str(huge_ps) if a == "{huge_ps}" else a for a in argv]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.run([sys.executable, "-m", "sgdsim.cli", *argv, "-q"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=8)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: sgdsim {argv}: still running after 8 s")
    check_contract(proc.returncode, proc.stdout, proc.stderr, argv)


# ----------------------------------------------------------------------------- output files

@pytest.mark.parametrize("argv,name", [
    (["predict", PROFILE, "--workers", "1", *TINY, "--timeline", "{}"], "t.json"),
    (["predict", PROFILE, "--workers", "1", "--model", "coarse", "--report", "{}"], "r.html"),
    (["report", PROFILE, "--workers", "1", "--model", "coarse", "-o", "{}"], "r.html"),
    (["import", "pipedream", GRAPH, "--batch-size", "8", "-o", "{}"], "o.json"),
    (["calibrate", PROFILE, "--step-time", "0.5s", "--hardware",
      str(ROOT / "examples" / "grids" / "hardware-lab-100mbps.json"), "-o", "{}"], "hw.json"),
    (["netbench", "--local", "-o", "{}"], "hw.json"),
], ids=["timeline", "predict-report", "report", "import", "calibrate", "netbench"])
def test_existing_output_is_not_overwritten_without_force(capsys, tmp_path, argv, name):
    target = tmp_path / name
    target.write_text("precious")
    argv = [str(target) if a == "{}" else a for a in argv]
    one_line_error(capsys, argv, seconds=10)
    assert target.read_text() == "precious"


