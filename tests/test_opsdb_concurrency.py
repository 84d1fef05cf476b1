"""Eight writers at once (on a file none of them has created yet) lose no row and never fail
"locked"; a writer killed with SIGKILL mid-transaction leaves whole batches only."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

pytest.importorskip("sqlalchemy")

from sgdsim.ops.db import open_db  # noqa: E402

# Each batch is one upsert (one transaction); its rows carry who wrote them and the batch id.
WRITER = """
import sys
from sgdsim.ops.db import open_db
from sgdsim.ops.records import Device, OpRecord
path, who, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
dev = Device("cpu (test)", "cpu", "t", "")
sys.stdin.readline()  # every writer imported: start together
with open_db(path) as db:
    for b in range(start, start + batches):
        db.upsert([OpRecord(dev, "relu", {"who": who, "batch": b, "i": i}, "float32",
                            1e-6 * (i + 1), 2e-6) for i in range(size)])
        print(b, flush=True)
"""


def _writer(path, who, batches, size, start=0):
    return subprocess.Popen([sys.executable, "-c", WRITER, path, str(who), str(batches),
                             str(size), str(start)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_eight_concurrent_writers_lose_no_row(tmp_path):
    path = str(tmp_path / "new" / "ops.sqlite")  # not there yet: they race to create it too
    procs = [_writer(path, who, 40, 5) for who in range(8)]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-2000:]
    with open_db(path, create=False) as db:
        rows = db.load()
    assert len(rows) == 8 * 40 * 5
    assert {(r.params["who"], r.params["batch"], r.params["i"]) for r in rows} == \
        {(w, b, i) for w in range(8) for b in range(40) for i in range(5)}
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _batches(path) -> dict[int, int]:
    """batch id -> rows of that batch, after checking the file's integrity."""
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    sizes: dict[int, int] = {}
    with open_db(path, create=False) as db:
        for r in db.load():
            sizes[r.params["batch"]] = sizes.get(r.params["batch"], 0) + 1
    return sizes


@pytest.mark.parametrize("delay_s", [0.0, 0.013, 0.037])
def test_a_killed_writer_leaves_whole_batches_only(tmp_path, delay_s):
    path = str(tmp_path / "ops.sqlite")
    open_db(path).close()
    committed = 0
    for round_ in range(2):  # killed twice: recovery after a kill must leave a usable file
        proc = _writer(path, 0, 100_000, 400, start=1000 * round_)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        for _ in range(3):  # a few batches committed, then killed amid the following ones
            assert proc.stdout.readline().strip()
        time.sleep(delay_s)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        sizes = _batches(path)
        mine = sorted(b for b in sizes if b >= 1000 * round_)
        assert len(mine) >= 3
        assert mine == list(range(1000 * round_, 1000 * round_ + len(mine)))  # none skipped
        assert set(sizes.values()) == {400}  # every batch whole, none partial
        assert len(sizes) > committed
        committed = len(sizes)
