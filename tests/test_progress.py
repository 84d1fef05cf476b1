"""Progress: shown on a terminal after the quiet period, never in logs or under --quiet."""
from __future__ import annotations

import io
import time

import pytest

from sgdsim import progress
from sgdsim.progress import Progress, status


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _not_quiet():
    progress.configure(False)
    yield
    progress.configure(False)


def _wait_for(predicate, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_terminal_sees_the_bar_once_the_work_outlasts_the_quiet_period():
    out = _Terminal()
    bar = Progress(4, "simulating", stream=out, quiet_s=0.0)
    assert _wait_for(lambda: bar._bar is not None)
    bar.advance(2)
    bar.close()
    text = out.getvalue()
    assert "simulating" in text and "2/4" in text


def test_short_work_prints_nothing():
    out = _Terminal()
    bar = Progress(4, "simulating", stream=out, quiet_s=5.0)
    bar.advance(4)
    bar.close()
    time.sleep(0.05)
    assert out.getvalue() == ""


@pytest.mark.parametrize("stream,quiet", [(io.StringIO(), False), (_Terminal(), True)])
def test_logs_and_quiet_runs_get_no_progress(stream, quiet):
    progress.configure(quiet)
    with Progress(2, "simulating", stream=stream, quiet_s=0.0) as bar:
        time.sleep(0.1)
        bar.advance()
    with status("compiling", stream=stream, quiet_s=0.0):
        time.sleep(0.1)
    assert stream.getvalue() == ""


def test_a_status_spinner_names_the_work():
    out = _Terminal()
    with status("profiling zoo:mlp", stream=out, quiet_s=0.0):
        time.sleep(0.3)
    assert "profiling zoo:mlp" in out.getvalue()


def test_every_command_takes_quiet():
    import argparse

    from sgdsim.cli import build_parser

    def leaves(p, path=()):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, p
        for a in subs:
            for name, child in a.choices.items():
                yield from leaves(child, path + (name,))

    found = list(leaves(build_parser()))
    assert len(found) > 10
    for path, p in found:
        assert any("--quiet" in a.option_strings for a in p._actions), path


def test_quiet_silences_the_notices_but_not_the_answer(capsys, tmp_path):
    from sgdsim.cli import main

    argv = ["predict", "examples/profiles/alexnet.json", "--workers", "1", "--model", "coarse",
            "--report", str(tmp_path / "r.html")]
    assert main(argv) == 0
    loud = capsys.readouterr()
    assert "wrote" in loud.err
    assert main([*argv[:-1], str(tmp_path / "r2.html"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out == loud.out and (tmp_path / "r2.html").exists()
