"""What a step pays the OS for memory (``profiler/memory.py``), measured with page counts the
kernel cannot avoid: a 64 MiB block is above glibc's largest mmap threshold (32 MiB), so every
malloc of it maps fresh pages, and writing it faults each 4 KiB page in once."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sgdsim.errors import ConfigError
from sgdsim.profiler import memory

BLOCK = 64 << 20
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or memory.PAGE_BYTES != 4096
    or (THP.exists() and "[always]" in THP.read_text()),
    reason="page counts assume Linux, 4 KiB pages and no transparent huge pages by default")

LOOP = textwrap.dedent("""
    import ctypes, ctypes.util, json, sys
    from sgdsim.profiler import memory
    if sys.argv[1] == "keep":
        memory.keep_freed_memory()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    faulted = []
    for _ in range(4):
        before, _ = memory.os_cost()
        ptr = libc.malloc(%d)
        ctypes.memset(ptr, 1, %d)
        libc.free(ptr)
        faulted.append(memory.os_cost()[0] - before)
    print(json.dumps(faulted))
""" % (BLOCK, BLOCK))


def _faults_per_block(mode: str) -> list[int]:
    out = subprocess.run([sys.executable, "-c", LOOP, mode], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_every_fresh_block_is_faulted_in_again():
    faulted = _faults_per_block("as-is")
    assert all(b >= 0.95 * BLOCK for b in faulted), faulted


def test_kept_memory_is_faulted_in_once():
    first, *later = _faults_per_block("keep")
    assert first >= 0.95 * BLOCK
    assert all(b <= 0.02 * BLOCK for b in later), later


def test_os_cost_is_monotone_and_in_bytes():
    b0, k0 = memory.os_cost()
    b1, k1 = memory.os_cost()
    assert b1 >= b0 >= 0 and k1 >= k0 >= 0 and b0 % memory.PAGE_BYTES == 0


def _notes(kernel_s, faulted_bytes, step_s, kept=False):
    return {"plain_kernel_s": kernel_s, "plain_faulted_bytes": faulted_bytes,
            "plain_step_s": step_s, "keep_memory": kept}


def test_kernel_note_only_from_a_tenth_of_the_step():
    assert memory.kernel_note(_notes(0.05, 740e6, 1.0)) is None
    assert memory.kernel_note(_notes(0.0, 0, 0.0)) is None
    assert memory.kernel_note(_notes(0.3, 740e6, 1.0, kept=True)) is None
    line = memory.kernel_note(_notes(0.3, 740e6, 1.0))
    assert "30% of a step (300 ms)" in line and "740 MB" in line and "--keep-memory" in line


def test_keep_freed_memory_without_glibc_is_one_line(monkeypatch):
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: (_ for _ in ()).throw(OSError(name)))
    with pytest.raises(ConfigError, match="needs glibc's malloc"):
        memory.keep_freed_memory()


BIG_STEP = """
import torch
from torch import nn


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        fresh = torch.ones(%d)  # 64 MiB, freed at the end of the step
        return x @ self.weight + fresh[:4]


def build(batch_size):
    return Big(), (torch.randn(batch_size, 4), None), lambda out, _: out.sum()
""" % (BLOCK // 4)


def _profile(tmp_path, *flags) -> dict:
    pytest.importorskip("torch")
    model = tmp_path / "big.py"
    model.write_text(BIG_STEP)
    out = tmp_path / f"p{len(flags)}.json"
    run = subprocess.run([sys.executable, "-m", "sgdsim.cli", "profile", f"{model}:build",
                          "--batch-size", "2", "--steps", "3", "--warmup", "1", "--threads", "1",
                          "-o", str(out), *flags], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())["profiler"]


def test_profile_records_what_each_plain_step_faults_in(tmp_path):
    notes = _profile(tmp_path)
    assert notes["keep_memory"] is False
    assert notes["plain_faulted_bytes"] >= 0.95 * BLOCK
    assert notes["plain_kernel_s"] >= 0


def test_profile_keep_memory_faults_nothing_in_after_warm_up(tmp_path):
    notes = _profile(tmp_path, "--keep-memory")
    assert notes["keep_memory"] is True
    assert notes["plain_faulted_bytes"] <= 0.02 * BLOCK


def test_keep_memory_with_estimate_is_refused(tmp_path):
    run = subprocess.run([sys.executable, "-m", "sgdsim.cli", "profile", "zoo:mlp",
                          "--batch-size", "2", "--estimate", "--keep-memory",
                          "-o", str(tmp_path / "e.json")], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "sgdsim: error: --keep-memory applies to a measured profile; --estimate runs nothing"]


def test_describe_for_info():
    notes = {"plain_faulted_bytes": 740e6, "plain_kernel_s": 0.3, "plain_step_s": 1.2,
             "keep_memory": False}
    assert memory.describe(notes) == ("25% of a plain step in the kernel, 740 MB faulted in a "
                                      "step, with the allocator as the job runs it")
    assert "(--keep-memory)" in memory.describe({**notes, "keep_memory": True})
    assert memory.describe({"plain_step_s": 1.0}) is None  # a profile from before the notes
