"""``ops measure`` times calls with freed memory kept (``measure.keep_memory``): a tensor above
glibc's largest mmap threshold (32 MiB) is then faulted in once, not at every copy, so a row
does not depend on what the process freed before it. Page counts, as in
``test_profiler_memory.py``: a 48 MiB gradient written once faults in its 12,288 pages."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sgdsim.profiler import memory

pytest.importorskip("torch")
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or memory.PAGE_BYTES != 4096
    or (THP.exists() and "[always]" in THP.read_text()),
    reason="page counts assume Linux, 4 KiB pages and no transparent huge pages by default")

TABLE = {"num": 12288, "dim": 1024, "indices": 64, "gw": 1}  # a 48 MiB table and gradient
TABLE_BYTES = 12288 * 1024 * 4

REPEATS = 4
SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import torch
    from sgdsim.ops import measure
    from sgdsim.ops.optypes import REGISTRY
    from sgdsim.profiler import memory
    torch.set_num_threads(1)
    if sys.argv[1] == "keep":
        assert measure.keep_memory()
    timed, seen = measure._timed_backward, []

    def counted(runner, k, sync):  # (copies, bytes faulted in) of every backward run
        before, _ = memory.os_cost()
        t = timed(runner, k, sync)
        seen.append((k, memory.os_cost()[0] - before))
        return t

    measure._timed_backward = counted
    call = REGISTRY["embedding"].build(json.loads(sys.argv[2]), "float32")
    measure.time_call(call, np.random.default_rng(0), repeats=int(sys.argv[3]))
    print(json.dumps(seen))
""")


def _timed_pairs(mode: str) -> list[tuple[int, int]]:
    """(copies, bytes faulted in) of each run of the timed pairs: the last 2 x REPEATS."""
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode, json.dumps(TABLE), str(REPEATS)],
                         capture_output=True, text=True, check=True)
    return [tuple(x) for x in json.loads(out.stdout)][-2 * REPEATS:]


def test_a_large_gradient_faults_in_at_every_copy_as_glibc_runs():
    # glibc maps each copy's fresh 48 MiB gradient afresh: every timed run pays for all of them
    runs = _timed_pairs("as-is")
    assert all(faulted >= 0.95 * k * TABLE_BYTES for k, faulted in runs), runs


def test_kept_memory_times_pairs_that_fault_nothing_in():
    # the settled allocator serves the gradients from memory it holds; a run may still land a
    # gradient in fresh memory now and then (what the copies allocate fragments the heap: one
    # of a two-copy run's gradients, in up to 3 of 8 runs seen), so at least half the runs are
    # clean and all of them together fault in at most half of what glibc's way costs (every
    # copy's gradient, the test above)
    runs = _timed_pairs("keep")
    clean = [faulted <= 0.1 * TABLE_BYTES for _, faulted in runs]
    assert sum(clean) >= 0.5 * len(runs), runs
    assert sum(f for _, f in runs) <= 0.5 * sum(k for k, _ in runs) * TABLE_BYTES, runs


def test_measure_calls_keeps_memory(monkeypatch):
    from sgdsim.ops import collect, measure

    calls = []
    monkeypatch.setattr(measure, "keep_memory", lambda: calls.append(1) or True)
    assert list(collect.measure_calls([], None, None)) == []
    assert calls == [1]
