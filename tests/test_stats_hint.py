"""``ops stats``' next steps for types above the bar: the samples a grid was measured with,
inverted from its rows, and the commands it prints (only for types above the bar)."""
from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.ops.collect import grid_shapes, samples_measured
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.stats_hint import RATIO_BAR, RETEST_ROWS, next_steps, timing_flags

TYPES = sorted(name for name in REGISTRY if name != "other")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TYPES), st.integers(1, 300))
def test_samples_measured_inverts_grid_shapes(op, n):
    assert samples_measured(op, grid_shapes(op, n)) == n


def test_samples_measured_of_the_readme_grid():
    # --samples 30: eltwise draws 120 shapes, conv2d 120, mm 102, relu 30; a few rows short (a
    # type's space smaller than asked) still reads as the samples that would have drawn at least them
    assert [samples_measured(op, r) for op, r in (("eltwise", 120), ("conv2d", 120), ("mm", 102), ("relu", 30))] == \
        [30, 30, 30, 30]
    assert samples_measured("relu", 29) == 29 and samples_measured("eltwise", 119) == 30


def _flag(op, rows, retest_rows, device="cpu (1 threads, X)", dtype="float32"):
    return {"device": device, "op": op, "dtype": dtype, "rows": rows, "retest_rows": retest_rows}


def test_next_steps_doubles_each_types_samples_and_retests_the_few():
    lines = next_steps([_flag("conv2d", 120, 10), _flag("relu", 30, 30), _flag("max_pool2d", 96, 10)],
                       "my ops.sqlite")
    prose = [line for line in lines if not line.startswith("  ")]
    assert " ".join(prose).startswith(f"above {RATIO_BAR}x (cpu (1 threads, X), float32): conv2d, relu, max_pool2d.")
    assert all(len(line) <= 100 for line in prose) and lines[:len(prose)] == prose
    db = " --db 'my ops.sqlite'"  # quoted: the line runs as printed
    assert lines[len(prose):] == [
        f"  sgdsim ops measure --grid conv2d,relu --samples 60{db}",
        f"  sgdsim ops measure --grid max_pool2d --samples 120{db}",
        f"  sgdsim ops train --op conv2d,relu,max_pool2d --budget 10 --members 3{db}",
        f"  sgdsim ops retest --op conv2d,max_pool2d --samples {RETEST_ROWS}{db}"
        "   # a retest of fewer rows is a noisy bar"]
    assert shlex.split(lines[len(prose)])[-1] == "my ops.sqlite"


def test_next_steps_per_device_and_dtype():
    lines = next_steps([_flag("mm", 102, 30, dtype="bfloat16"), _flag("mm", 102, 30, device="gpu x")],
                       None, several_devices=True)
    blocks = [i for i, line in enumerate(lines) if line.startswith("above")]  # one per (device, dtype)
    assert len(blocks) == 2 and not any("--db" in line for line in lines)  # the default database
    assert "  sgdsim ops measure --grid mm --samples 60 --dtype bfloat16" in lines
    assert "  sgdsim ops train --device 'gpu x' --op mm --budget 10 --members 3" in lines
    assert not any("retest" in line for line in lines)  # both retests have enough rows
    assert next_steps([], "x.sqlite") == []


def test_the_commands_time_on_the_device_the_rows_are_from():
    assert timing_flags("cpu (1 threads, AMD EPYC)") == ""
    assert timing_flags("cpu (4 threads, Intel(R) Xeon(R) Gold)") == " --threads 4"
    assert timing_flags("cuda:1 (NVIDIA H100 80GB HBM3)") == " --device cuda:1"
    assert timing_flags("cuda (NVIDIA A100)") == " --device cuda"
    assert timing_flags("cpu (test)") == ""  # not a name `ops measure` writes: nothing guessed
    lines = next_steps([_flag("mm", 102, 10, device="cpu (4 threads, X)")], None)
    assert "  sgdsim ops measure --grid mm --samples 60 --threads 4" in lines
    assert "  sgdsim ops retest --op mm --samples 30 --threads 4   # a retest of fewer rows is a noisy bar" in lines


def test_a_type_retested_whole_is_not_asked_again():
    # the README's small path: 10 rows a type, retested at most 10: no retest line loops
    lines = next_steps([_flag("relu", 10, 10), _flag("gelu", 10, 6)], "x.sqlite")
    assert lines[-1] == "  sgdsim ops retest --op gelu --samples 30 --db x.sqlite   # a retest of fewer rows is a noisy bar"
    assert not any("retest" in line for line in next_steps([_flag("relu", 10, 10)], "x.sqlite"))


@pytest.mark.parametrize("held_out, shown", [(0.05, True), (0.04, False)])
def test_stats_prints_them_only_above_the_bar(tmp_path, capsys, held_out, shown):
    pytest.importorskip("sqlalchemy")
    from test_opsdb_cli import DEV, rec, run  # beside this file: the CLI's throwaway parser

    from sgdsim.ops.db import open_db

    path = str(tmp_path / "ops.sqlite")
    with open_db(path) as db:
        db.upsert([rec(n, n * 1e-6) for n in range(1, 31)])
        db.save_estimator(DEV.name, "relu", "float32", json.dumps({"stats": {"held_out_fwd_median": held_out}}))
        db.save_retest(DEV.name, "relu", "float32", {"rows": 10, "fwd_median": 0.03, "fwd_p90": 0.05,
                                                      "bwd_median": 0.03, "bwd_p90": 0.05, "retested_at": 1.7e9})
    assert run("stats", "--db", path) == 0
    out = capsys.readouterr().out
    assert f"{held_out / 0.03:.2f}x" in out
    assert (f"sgdsim ops measure --grid relu --samples 60 --db {path}" in out) == shown
    assert ("sgdsim ops retest --op relu --samples 30" in out) == shown


def test_a_device_name_reads_back_as_the_device_it_was_written_for():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from sgdsim.profiler.api import _device_name, device_of_name

    gpu = SimpleNamespace(cuda=SimpleNamespace(get_device_name=lambda dev: "NVIDIA H100 80GB HBM3"))
    for dev, threads, want in ((torch.device("cpu"), 4, ("cpu", 4)), (torch.device("cpu"), 1, ("cpu", 1)),
                               (torch.device("cuda:1"), 1, ("cuda:1", 1)), (torch.device("cuda"), 1, ("cuda", 1))):
        assert device_of_name(_device_name(gpu, dev, threads)) == want
    assert device_of_name("cpu (test)") is None and device_of_name("gpu x") is None
