"""The contract every ``sgdsim`` invocation keeps, and how the fuzz tests check it.

Every invocation must exit 0, or exit 2 with exactly one stderr line starting with
``sgdsim: error:``: never a traceback, never a hang, never a nan/inf in the output of a
successful run, never an existing output file overwritten without ``--force``. Calls run in
process through ``sgdsim.cli.main`` under an alarm; ``tools/fuzz_cli.py`` is the long-running,
subprocess version (the 775-input run of issue 10).
"""
from __future__ import annotations

import contextlib
import json
import re
import signal
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from sgdsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "profiles"
PROFILE = str(EXAMPLES / "alexnet.json")
GRAPH = str(ROOT / "tests" / "data" / "pipedream" / "alexnet.graph.txt")
MEASURED = ROOT / "examples" / "calibrate" / "measured-async.csv"
BASE = json.loads(Path(PROFILE).read_text())
TINY = ["--steps", "2", "--warmup", "0", "--replications", "1", "--jobs", "1"]
DEADLINE_S = 20.0  # per invocation: a tiny run takes well under a second
NONFINITE = re.compile(r"(?i)(?<![a-z0-9_])(nan|inf|infinity)(?![a-z0-9_])")
BIG_INT = "99999999999999999999"

# derandomize: the same examples on every run, so that CI is reproducible; exploring new inputs
# is the job of tools/fuzz_cli.py (make fuzz) with new seeds.
FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                      HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- the contract

class Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in sgdsim eats it."""


@contextlib.contextmanager
def deadline(seconds: float):
    def on_alarm(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(capsys, argv, seconds: float = DEADLINE_S):
    """``sgdsim argv`` in process: (exit code, stdout, stderr), failing on a traceback or a
    hang with the argv and the last lines of the traceback."""
    argv = [str(a) for a in argv]
    capsys.readouterr()
    try:
        with deadline(seconds):
            rc = main(argv)
    except SystemExit as e:  # argparse: usage errors and --help
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Hang as e:
        pytest.fail(f"hang: sgdsim {argv}: {e}")
    except BaseException as e:  # noqa: BLE001 - anything escaping main is a traceback
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "sgdsim" in f.filename]
        where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else "?"
        tail = "".join(traceback.format_exception(e)[-3:])
        capsys.readouterr()
        pytest.fail(f"traceback: sgdsim {argv}\nlast sgdsim frame: {where}\n{tail}")
    out, err = capsys.readouterr()
    return rc, out, err


def check_contract(rc, out, err, argv):
    assert "Traceback" not in err, (argv, err)
    assert rc in (0, 2), (argv, rc, err)
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1, (argv, err)
        assert lines[0].startswith("sgdsim: error:"), (argv, err)
    else:
        m = NONFINITE.search(out)
        assert m is None, (argv, f"non-finite value {m.group(0)!r} in the output", out[:2000])


def contract(capsys, argv, seconds: float = DEADLINE_S):
    rc, out, err = run(capsys, argv, seconds)
    check_contract(rc, out, err, argv)
    return rc, out, err


def one_line_error(capsys, argv, seconds: float = DEADLINE_S):
    rc, out, err = run(capsys, argv, seconds)
    check_contract(rc, out, err, argv)
    assert rc == 2, (argv, rc, out[:500], err)
    return err


