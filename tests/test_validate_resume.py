"""``sgdsim validate`` keeps what it measured: a failing lab child names its real error (not
the torch warnings after it), a failing point leaves the finished points and a summary, and
``--resume`` measures only the rest, ending where one uninterrupted run ends. The lab and the
measurements are fakes (module hooks); nothing here needs torch, root or the lab."""
from __future__ import annotations

import contextlib
import csv
import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from sgdsim.analytic.coarse_profile import parse_coarse, to_profile
from sgdsim.errors import SgdsimError
from sgdsim.lab.child_error import cause_line
from sgdsim.profile.io import save_profile
from sgdsim.validate import load_grid, run_validation
from sgdsim.validate import run as run_module
from sgdsim.validate.cli import main
from sgdsim.validate.resume import PointFailed
from conftest import LAB_DEFAULTS

GRID = f"""
{LAB_DEFAULTS}profile = "prof.json"
[[case]]
name = "ps"
workers = "1-3"
[[case]]
name = "ring"
arch = "allreduce"
mode = "sync"
workers = [2]
"""
POINTS = [("ps", 1), ("ps", 2), ("ps", 3), ("ring", 2)]  # the grid's points, in order
ERROR = "RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.3]:38060"
WARNING = ("[W1015 12:00:01.123456 socket.cpp:663] [c10d] The hostname of the client socket "
           "cannot be retrieved. err=-3")
STDERR = "\n".join([
    WARNING,
    "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py:83: UserWarning: "
    "barrier(): using the device under current context",
    "  warnings.warn(",
    "Traceback (most recent call last):",
    '  File "/src/sgdsim/lab/train/allreduce.py", line 80, in main',
    "    dist.all_reduce(flat)",
    ERROR,
    WARNING.replace("12:00:01", "12:00:02"),
    "[W1015 12:00:02.5 ProcessGroupGloo.cpp:101] Warning: destroying a process group that "
    "was not shut down",
    "",
])


def measured(case, workers: int) -> float:
    """A fake measurement of full precision (points.csv must keep it exactly)."""
    return 7.0 * workers ** 0.8 + len(case.name) / 3


class Lab:
    """The lab and measurement hooks: records every lab brought up and every measurement; the
    ``fail_at``-th measurement fails with the error a failing rank of the real runner gives."""

    def __init__(self, fail_at: int | None = None, error=None):
        self.opened, self.calls = [], []
        self.fail_at, self.error = fail_at, error

    def open(self, case):
        self.opened.append(case.name)
        return contextlib.nullcontext(None)

    def measure(self, case, workers, lab):
        self.calls.append((case.name, workers))
        if len(self.calls) == self.fail_at:
            raise self.error or SgdsimError(
                f"lab run: rank 3 (lab host 4) failed: {cause_line(STDERR, 1)}")
        return measured(case, workers)


@pytest.fixture
def grid(tmp_path) -> Path:
    save_profile(to_profile(parse_coarse("size=2MB,fwd=20ms,bwd=40ms,batch=16")),
                 tmp_path / "prof.json")
    path = tmp_path / "grid.toml"
    path.write_text(GRID, encoding="utf-8")
    return path


def validate(monkeypatch, lab: Lab, *argv) -> int:
    """``sgdsim validate ARGV --quiet`` with ``lab`` as the lab (the CLI: exit codes, stderr)."""
    monkeypatch.setattr(run_module, "default_lab", lab.open)
    monkeypatch.setattr(run_module, "default_measure", lab.measure)
    return main(["validate", *map(str, argv), "--quiet"])


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def files(folder: Path) -> dict:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sgdsim: error:"), err
    return err


# ----------------------------------------------------------------------------- the cause

def test_the_cause_is_the_traceback_not_the_warnings_after_it():
    line = cause_line(STDERR, 1)
    assert line == ERROR
    # without a traceback: the last line that is not a warning
    assert cause_line(f"{WARNING}\nconnect: no route to host\n{WARNING}\n", 1) == \
        "connect: no route to host"
    # only warnings: the exit status, and the warning as a last resort
    only = cause_line(f"{WARNING}\n", -9)
    assert only.startswith("killed by signal 9") and "client socket" in only
    assert cause_line("", 3) == "exit code 3"
    long = cause_line("ValueError: " + "x" * 1000, 1)
    assert long.startswith("ValueError: x") and len(long) <= 400


def test_the_benchmarks_name_the_cause_too():
    """netbench's gloo and interference benchmarks and its hubs read their children's stderr
    through ``procs.last_line``: the same cause, and a message when there is none."""
    from sgdsim.lab.procs import last_line

    assert last_line(STDERR) == ERROR
    assert last_line(None) == "no message"


def test_a_failing_rank_is_reported_with_its_error(tmp_path):
    """The runner's own path: a child that logs the sample to stderr and exits 1."""
    from sgdsim.lab.train.runner import _Child, _wait

    (tmp_path / "failing_rank.py").write_text(
        f"import sys\nsys.stderr.write({STDERR!r})\nsys.exit(1)\n", encoding="utf-8")

    class Host:  # a lab whose hosts are this machine
        def popen(self, host, argv, **kw):
            return subprocess.Popen(argv, **kw)

    with tempfile.TemporaryDirectory() as tmp:
        child = _Child(Host(), 4, ["failing_rank"], "rank 3", tmp, {"PYTHONPATH": str(tmp_path)})
        try:
            with pytest.raises(SgdsimError) as exc:
                _wait([child], lambda: False, 30.0, "the ranks")
        finally:
            child.stop()
    assert str(exc.value) == f"lab run: rank 3 (lab host 4) failed: {ERROR}"


# ----------------------------------------------------------------------------- stop and resume

def test_a_failed_point_keeps_the_finished_ones_and_resume_measures_the_rest(
        tmp_path, grid, monkeypatch, capsys):
    whole = Lab()
    assert validate(monkeypatch, whole, grid, "-o", tmp_path / "whole") == 0
    assert whole.calls == POINTS

    out = tmp_path / "out"
    assert validate(monkeypatch, Lab(fail_at=3), grid, "-o", out) == 2
    err = error_line(capsys)
    assert "point 3 of 4 (case 'ps', 3 worker(s))" in err and ERROR in err
    assert "[W" not in err and "Warning" not in err and "--resume" in err
    assert {(r["case"], int(r["workers"])) for r in rows(out / "points.csv")} == set(POINTS[:2])
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["points_measured"], summary["points_total"]) == (2, 4)
    assert summary["overall"]["fine"]["points"] == 2
    assert "Incomplete: 2 of 4 points" in (out / "summary.md").read_text()
    assert (out / "plots" / "ring.png").stat().st_size > 0

    (tmp_path / "prof.json").unlink()  # the kept profiles are used: profiling again would fail
    rest = Lab()
    assert validate(monkeypatch, rest, grid, "-o", out, "--resume") == 0, capsys.readouterr().err
    assert rest.calls == POINTS[2:] and rest.opened == ["ps", "ring"]
    assert (out / "points.csv").read_text() == (tmp_path / "whole" / "points.csv").read_text()
    again = json.loads((out / "summary.json").read_text())
    whole_summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert list(whole_summary["inputs_sha256"]) == [str(tmp_path / "prof.json")]
    assert whole_summary["inputs_sha256"] == summary["inputs_sha256"]
    assert again["inputs_sha256"] == {}  # the profile was deleted: nothing left to hash
    assert again == {**whole_summary, "inputs_sha256": {}}  # otherwise the uninterrupted run's
    assert "Incomplete" not in (out / "summary.md").read_text()

    done = Lab()  # nothing left: no lab is brought up, the summary is the same
    assert validate(monkeypatch, done, grid, "-o", out, "--resume") == 0
    assert done.opened == done.calls == []
    assert json.loads((out / "summary.json").read_text()) == again


def test_a_point_cut_short_between_its_runs_is_measured_again(tmp_path, grid, monkeypatch,
                                                              capsys):
    grid.write_text(GRID.replace('warmup = "1s"', 'warmup = "1s"\nrepeats = 2'), encoding="utf-8")
    out = tmp_path / "out"
    assert validate(monkeypatch, Lab(fail_at=4), grid, "-o", out) == 2  # point 2, run 2
    assert "point 2 of 4 (case 'ps', 2 worker(s))" in error_line(capsys)
    assert {int(r["workers"]) for r in rows(out / "points.csv")} == {1}
    rest = Lab()
    assert validate(monkeypatch, rest, grid, "-o", out, "--resume") == 0
    assert rest.calls == [p for p in POINTS[1:] for _ in range(2)]
    runs = {(r["case"], int(r["workers"])): r["measured_runs"] for r in rows(out / "points.csv")}
    assert all(len(v.split(";")) == 2 for v in runs.values()) and len(runs) == 4


def test_ctrl_c_keeps_the_finished_points(tmp_path, grid):
    lab, said = Lab(fail_at=4, error=KeyboardInterrupt()), []
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_validation(load_grid(grid), str(out), measure_fn=lab.measure, lab_fn=lab.open,
                       log=said.append)
    assert {(r["case"], int(r["workers"])) for r in rows(out / "points.csv")} == set(POINTS[:3])
    assert json.loads((out / "summary.json").read_text())["points_measured"] == 3
    assert "--resume" in said[-1] and "3 finished point(s) of 4" in said[-1]


def test_the_api_names_the_failed_point(tmp_path, grid):
    with pytest.raises(PointFailed) as exc:
        run_validation(load_grid(grid), str(tmp_path / "out"), measure_fn=Lab(fail_at=4).measure,
                       lab_fn=Lab().open, log=lambda m: None)
    assert (exc.value.case, exc.value.workers) == ("ring", 2) and exc.value.cause.endswith(ERROR)


# ----------------------------------------------------------------------------- refusals

def _stopped_after_one_point(tmp_path, grid, monkeypatch, capsys):
    """A run that stopped at point 2 of 4: its folder and the files in it."""
    out = tmp_path / "out"
    assert validate(monkeypatch, Lab(fail_at=2), grid, "-o", out) == 2
    capsys.readouterr()
    return out, files(out)


def test_resume_refuses_an_input_file_edited_since(tmp_path, grid, monkeypatch, capsys):
    out, before = _stopped_after_one_point(tmp_path, grid, monkeypatch, capsys)
    prof = tmp_path / "prof.json"
    kept = prof.read_bytes()
    prof.write_bytes(kept + b"\n")  # any edit: the kept points came from the old contents
    lab = Lab()
    assert validate(monkeypatch, lab, grid, "-o", out, "--resume") == 2
    err = error_line(capsys)
    assert str(prof) in err and "changed since" in err and "--force" in err
    assert lab.calls == [] and files(out) == before
    prof.write_bytes(kept)  # as it was: the run goes on
    assert validate(monkeypatch, lab, grid, "-o", out, "--resume") == 0
    assert lab.calls == POINTS[1:]


def test_the_summary_names_inputs_from_where_the_run_started(tmp_path, grid, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the grid and its profile lie below: no absolute path is written
    out, before = _stopped_after_one_point(tmp_path, grid, monkeypatch, capsys)
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["inputs_sha256"]) == ["prof.json"]
    assert {c["config"]["profile"] for c in summary["cases"]} == {"prof.json"}
    (tmp_path / "prof.json").write_text((tmp_path / "prof.json").read_text() + "\n")
    assert validate(monkeypatch, Lab(), grid, "-o", out, "--resume") == 2  # still checked
    assert "changed since" in error_line(capsys) and files(out) == before


def test_resume_refuses_another_grid(tmp_path, grid, monkeypatch, capsys):
    out, before = _stopped_after_one_point(tmp_path, grid, monkeypatch, capsys)
    other = tmp_path / "other.toml"
    other.write_text(GRID.replace('workers = "1-3"', 'workers = "1-4"'), encoding="utf-8")
    lab = Lab()
    assert validate(monkeypatch, lab, other, "-o", out, "--resume") == 2
    err = error_line(capsys)
    assert "another grid" in err and str(other) in err
    assert lab.calls == [] and files(out) == before
    # the same grid reworded (a comment, the layout) is the same grid
    grid.write_text("# measured on the VM\n" + GRID.replace(" = ", "="), encoding="utf-8")
    assert validate(monkeypatch, lab, grid, "-o", out, "--resume") == 0
    assert lab.calls == POINTS[1:]


def test_resume_refuses_force_and_a_folder_it_cannot_place(tmp_path, grid, monkeypatch, capsys):
    out = tmp_path / "out"
    assert validate(monkeypatch, Lab(fail_at=3), grid, "-o", out) == 2
    capsys.readouterr()
    before, lab = files(out), Lab()
    assert validate(monkeypatch, lab, grid, "-o", out, "--resume", "--force") == 2
    assert "--force" in error_line(capsys)
    assert validate(monkeypatch, lab, grid, "-o", out) == 2  # neither: refused as before
    assert "refusing to overwrite" in error_line(capsys)
    assert lab.calls == [] and files(out) == before
    (out / "summary.json").unlink()  # whose points are these? no grid recorded
    assert validate(monkeypatch, lab, grid, "-o", out, "--resume") == 2
    assert "did not record its grid" in error_line(capsys) and lab.calls == []


def test_resume_of_an_empty_folder_measures_everything(tmp_path, grid, monkeypatch):
    lab = Lab()
    assert validate(monkeypatch, lab, grid, "-o", tmp_path / "new", "--resume") == 0
    assert lab.calls == POINTS and len(rows(tmp_path / "new" / "points.csv")) > 0
