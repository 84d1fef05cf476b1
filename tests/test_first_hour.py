"""What a newcomer runs into: options a configuration would ignore, limits, clear messages
instead of tracebacks, plain numbers from the API, the bottleneck wording."""
from __future__ import annotations

import socket
import struct
import threading

import pytest

import sgdsim
from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.point import bottleneck_text
from sgdsim.predict import parse_workers
from sgdsim.sim import WorkerClass, simulate
from sgdsim.spec.limits import MAX_SIM_WORKER_SUM, MAX_WORKERS
from simcfg import simcfg

P = "examples/profiles/alexnet.json"


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("extra,option", [
    (["--arch", "allreduce", "--mode", "sync", "--sharing", "fcfs"], "--sharing"),
    (["--arch", "allreduce", "--mode", "sync", "--streams", "http2"], "--streams"),
    (["--arch", "allreduce", "--mode", "sync", "--order", "reverse"], "--order"),
    (["--window", "1MB"], "--window"),
    (["--fcfs-weight", "0.3"], "--fcfs-weight"),  # async: ps sharing, no hybrid
    (["--mode", "sync", "--sharing", "ps", "--fcfs-weight", "0.3"], "--fcfs-weight"),
    (["--rho-threshold", "0.5"], "--rho-threshold"),  # the fine model has no threshold
    (["--model", "coarse", "--mode", "sync", "--rho-threshold", "0.5"], "--rho-threshold"),
    (["--model", "coarse", "--steps", "10"], "--steps"),
    (["--model", "lin", "--seed", "3"], "--seed"),
    (["--model", "coarse", "--replications", "4"], "--replications"),
])
def test_an_option_the_configuration_ignores_is_refused(extra, option, capsys):
    rc, out = _run(["predict", P, "--workers", "2", *extra], capsys)
    assert rc == 2 and out.err.count("\n") == 1
    assert f"{option} applies to" in out.err and "would ignore it" in out.err


@pytest.mark.parametrize("extra", [
    ["--mode", "sync", "--fcfs-weight", "0.3", "--steps", "2", "--warmup", "0", "--replications", "1"],
    ["--model", "coarse", "--rho-threshold", "0.5"],
    ["--model", "all", "--rho-threshold", "0.5", "--steps", "2", "--warmup", "0", "--replications", "1"],
    ["--streams", "http2", "--window", "1MB", "--steps", "2", "--warmup", "0", "--replications", "1"],
])
def test_the_same_options_where_they_apply_are_used(extra, capsys):
    rc, out = _run(["predict", P, "--workers", "2", *extra], capsys)
    assert rc == 0, out.err


def test_the_coarse_rule_changes_the_answer(capsys):
    """--rho-threshold is used where accepted: a different threshold gives another number
    (at W = 2, below the knee: past it the saturated links answer, analytic/saturation.py)."""
    answers = {}
    for rho in ("0.1", "1.0"):
        rc, out = _run(["predict", "examples/profiles/vgg16.json", "--workers", "2", "--bandwidth",
                        "1Gbps", "--model", "coarse", "--rho-threshold", rho, "--format", "csv"], capsys)
        assert rc == 0
        answers[rho] = out.out.splitlines()[1].split(",")[2]
    assert answers["0.1"] != answers["1.0"]


@pytest.mark.parametrize("spec,message", [
    ("1-", "cannot parse worker counts"), ("", "cannot parse worker counts"),
    ("-3", "cannot parse worker counts"), ("4-2", "empty worker range"),
    ("0", "at least 1"), ("1-99999999999999", "at most"), ("99999999999999999999", "at most"),
])
def test_worker_specs_are_checked_before_any_list_is_built(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_workers(spec)


def test_worker_specs_parse():
    assert parse_workers("1-4,8,2") == [1, 2, 3, 4, 8]
    assert parse_workers(f"{MAX_WORKERS}") == [MAX_WORKERS]


@pytest.mark.parametrize("argv,message", [
    (["--workers", "2000"], "the simulator handles up to 1024 workers"),
    (["--workers", "1-300"], f"limit {MAX_SIM_WORKER_SUM:,}"),
    (["--workers", "1-3000", "--model", "coarse"], "at most 2,000 worker counts"),
    (["--worker-profile", f"a={P}:100000", "--steps", "3"], "the simulator handles up to 1024"),
    (["--workers", "2", "--seed", "-1"], "--seed must be an integer from 0 to 2^63-1"),
    (["--workers", "2", "--bandwidth", "1e-300bps"], "between 1kbps and 1Pbps"),
    (["--workers", "2", "--overhead-beta", "1e308s"], "--overhead-beta must be a duration"),
    (["--workers", "2", "--steps", "1000000"], "--steps must be from 1 to"),
])
def test_limits_are_refused_in_one_line(argv, message, capsys):
    rc, out = _run(["predict", *([] if "--worker-profile" in argv else [P]), *argv], capsys)
    assert rc == 2 and message in out.err and out.err.count("\n") == 1


@pytest.mark.parametrize("argv,message", [
    (["--bandwidth", "-1Gbps"], "'-1Gbps' reads as an option: write --bandwidth=-1Gbps"),
    (["--bandwidth=-1Gbps"], "bandwidth must be positive and finite, got '-1Gbps'"),
    (["--bucket-size=-25MB", "--arch", "allreduce", "--mode", "sync"], "size must be"),
])
def test_a_negative_value_is_named_for_what_it_is(argv, message, capsys):
    """A value that starts with '-' is an option to argparse, which then says only that a value
    is missing; given with '=', the sign is read and the number refused as negative."""
    try:
        rc = main(["predict", P, "--workers", "2", *argv])
    except SystemExit as e:  # argparse's own errors leave through sys.exit
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


def test_a_run_that_cannot_fit_the_op_budget_is_refused_before_it_starts():
    prof = sgdsim.load_profile(P)
    cfg = simcfg(bandwidth_bps=1e9, warmup_steps=50, steps_per_worker=5, max_ops=2000)
    with pytest.raises(ConfigError, match="55 steps \\(warm-up included\\) per worker need more"):
        simulate([WorkerClass("w", prof, 8)], cfg)


def test_a_budget_that_runs_out_in_the_warm_up_says_so():
    """Past the up-front bound (0.4 ops per profiled op) but short of the real need (~0.63)."""
    prof = sgdsim.load_profile(P)
    need_lower = 8 * prof.n_ops * 55 * 0.4
    cfg = simcfg(bandwidth_bps=1e9, warmup_steps=50, steps_per_worker=5,
                    max_ops=int(need_lower * 1.25))
    with pytest.raises(ConfigError, match="the warm-up per worker need more than"):
        simulate([WorkerClass("w", prof, 8)], cfg)


def test_the_api_returns_plain_python_numbers():
    pts = sgdsim.predict(P, workers=[1, 2], model="all", steps=2, warmup=0, replications=1)
    for p in pts:
        assert type(p.throughput) is float and type(p.ci_low) is float and type(p.workers) is int
        assert all(type(u) is float and 0.0 <= u <= 1.0 for u in p.utilization.values())


@pytest.mark.parametrize("util,text", [
    ({"uplink": 0.93, "worker": 0.4}, "uplink (93%)"),
    ({"uplink": 0.43, "worker": 0.2}, "none (busiest uplink 43%)"),
])
def test_a_resource_is_the_bottleneck_only_when_saturated(util, text):
    assert bottleneck_text({"bottleneck": "uplink", "utilization": util}) == text


def test_analytic_rows_print_no_zero_width_interval(capsys):
    """The coarse model's interval is its measured error; a baseline has none: 'exact (model)'."""
    rc, out = _run(["predict", P, "--workers", "2", "--model", "coarse"], capsys)
    row = out.out.splitlines()[1]
    assert rc == 0 and "[" in row and row.rstrip().endswith("-")
    rc, out = _run(["predict", P, "--workers", "2", "--model", "coarse", "--model-error", "0"], capsys)
    row = out.out.splitlines()[1]
    assert rc == 0 and "exact (model)" in row and row.rstrip().endswith("-")


def test_a_peer_that_resets_is_one_line(capsys):
    """netbench --host against a server that accepts and resets the connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def reset_one():
        conn, _ = srv.accept()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # RST instead of FIN

    threading.Thread(target=reset_one, daemon=True).start()
    rc, out = _run(["netbench", "--host", "127.0.0.1", "--port", srv.getsockname()[1]], capsys)
    srv.close()
    assert rc == 2 and out.err.startswith("sgdsim: error: ") and out.err.count("\n") == 1


def test_netbench_checks_its_output_before_measuring(capsys, tmp_path):
    rc, out = _run(["netbench", "--local", "-o", tmp_path / "nodir" / "hw.json"], capsys)
    assert rc == 2 and "does not exist" in out.err


def test_import_into_a_folder_is_refused_before_the_work(capsys, tmp_path):
    rc, out = _run(["import", "pipedream", "examples/pipedream/alexnet.graph.txt", "--batch-size",
                    "256", "-o", tmp_path, "--force"], capsys)
    assert rc == 2 and "it is a folder" in out.err


@pytest.mark.parametrize("argv", [
    ["predict", P, "--workers="], ["predict", P, "--workers", "2", "--report="],
    ["predict", P, "--workers", "2", "--timeline="], ["predict", P, "--bandwidth="],
    ["plan", P, "--dataset-size", "1000", "--plot="],
])
def test_an_empty_value_is_an_error_not_the_default(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [a if a != P else str(__import__("pathlib").Path(__file__).parents[1] / P) for a in argv]
    rc, out = _run(argv, capsys)
    assert rc == 2 and out.err.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_a_bucket_size_without_a_unit_is_refused(capsys):
    """DDP's option counts MB (bucket_cap_mb=25); read as bytes, 25 would be 25-byte buckets,
    a call per tensor: a bare number is refused in one line, as a bare duration is."""
    sync = ["--arch", "allreduce", "--mode", "sync", "--steps", "2", "--warmup", "0", "--replications", "1"]
    rc, out = _run(["predict", P, "--workers", "2", "--bucket-size", "25", *sync], capsys)
    assert rc == 2 and out.err.count("\n") == 1 and "--bucket-size 25 has no unit" in out.err
    assert _run(["predict", P, "--workers", "2", "--bucket-size", "25MB", *sync], capsys)[0] == 0
