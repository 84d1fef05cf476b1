"""Time of the operator database (issue 11's targets), on a fresh SQLite file:

- insert 100k measurements in one ``upsert`` (target <= 2 s), then re-measure all of them
  (the update path of the same statement);
- 10k ``lookup`` keys, the distinct calls of a large model (target <= 0.5 s), 9k of them found;
- ``load`` of everything and ``stats``.

``--write`` puts the table into docs/benchmarks-opsdb.md between the OPSDB markers.

    python benchmarks/bench_opsdb.py [--write]
"""
from __future__ import annotations

import os
import platform
import tempfile
import time

from docblock import publish

import sqlalchemy

from sgdsim.ops.db import open_db
from sgdsim.ops.records import Device, OpRecord, params_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks-opsdb.md")
DEVICE = Device("cpu-1t bench", "cpu", "pytorch bench", "")
OPS = ("conv2d", "mm", "relu", "add", "batch_norm")


def records(n: int, scale: float = 1.0) -> list[OpRecord]:
    """``n`` distinct conv2d-like shapes spread over five operator types."""
    return [OpRecord(DEVICE, OPS[i % 5], {"batch": 1 + i % 64, "cin": 3 + i // 64 % 512,
                                          "cout": 64, "hw": 7 + i // 32768, "k": 3},
                     "float32", scale * 1e-6 * (1 + i % 997), scale * 2e-6, 5, 0.01, 0.02,
                     1.7e9 + i) for i in range(n)]


def best_s(fn, repeat: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def timed_upserts(folder: str, fresh: list, again: list) -> tuple[float, float]:
    """Best of 3 fresh files: seconds to insert ``fresh``, then to update it with ``again``."""
    inserts, updates = [], []
    for i in range(3):
        with open_db(os.path.join(folder, f"try{i}.sqlite")) as db:
            t = time.perf_counter()
            assert db.upsert(fresh) == len(fresh)
            inserts.append(time.perf_counter() - t)
            t = time.perf_counter()
            db.upsert(again)
            updates.append(time.perf_counter() - t)
    return min(inserts), min(updates)


def main() -> None:
    rows = ["| what | rows / keys | wall (s) | target (s) |", "|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        fresh, again = records(100_000), records(100_000, scale=2.0)
        insert_s, update_s = timed_upserts(tmp, fresh, again)
        rows.append(f"| upsert, new rows (one transaction) | 100000 | {insert_s:.2f} | 2 |")
        rows.append(f"| upsert, every row re-measured (updates) | 100000 | {update_s:.2f} | 2 |")
        db = open_db(os.path.join(tmp, "try0.sqlite"), create=False)
        # 9k measured keys over the five types plus 1k never measured.
        keys = [r.key[1:] for r in again[::10][:9_000]]
        keys += [("conv2d", params_key({"batch": 0, "i": i}), "float32") for i in range(1_000)]
        sec, hits = best_s(lambda: db.lookup(DEVICE.name, keys))
        assert len(hits) == 9_000
        rows.append(f"| lookup (9k found, 1k missing) | 10000 | {sec:.3f} | 0.5 |")
        sec, everything = best_s(db.load)
        assert len(everything) == 100_000
        rows.append(f"| load, no filter | 100000 | {sec:.2f} | - |")
        sec, _ = best_s(db.stats)
        rows.append(f"| stats | 100000 | {sec:.2f} | - |")
        db.close()
    cpu = platform.processor() or platform.machine()
    rows.append(f"\nPython {platform.python_version()}, SQLAlchemy {sqlalchemy.__version__}, "
                f"SQLite {__import__('sqlite3').sqlite_version}, {cpu}, "
                f"{os.cpu_count()} cores; best of 3.")
    publish(DOC, "OPSDB", "\n".join(rows))


if __name__ == "__main__":
    main()
