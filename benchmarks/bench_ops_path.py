"""The README's small ops path, timed as a user runs it (issue 38's target: <= 3 min in all).

The commands are read from the README itself (its `sgdsim` lines that use ``small.sqlite`` or
``r50-est.json``, in order), so the benchmark times what the README tells a user to type. Each
runs as a whole process (``python -m sgdsim.cli``, imports included) in a fresh temporary
folder, one after the other, once: the path measures this machine, so a second run would
find its database filled.

``--write`` puts the table into docs/benchmarks-opsdb.md between the OPSPATH markers. Needs
torch (``make install-dev``). Run on a quiet machine: ``ops measure`` times operators.

    python benchmarks/bench_ops_path.py [--write]
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time

from docblock import machine, publish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks-opsdb.md")
README = os.path.join(ROOT, "README.md")
MARKERS = ("small.sqlite", "r50-est.json")
TARGET_S = 180.0


def readme_commands(path: str = README) -> list[list[str]]:
    """The small path's command lines, comments stripped, split as a shell would."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("sgdsim ") and any(m in line for m in MARKERS):
                out.append(shlex.split(line, comments=True))
    if len(out) < 3:
        raise SystemExit(f"{path}: expected the small ops path's commands, found {len(out)}")
    return out


def main() -> None:
    rows = ["| command (from the README) | wall (s) |", "|---|---:|"]
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for argv in readme_commands():
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "sgdsim.cli", *argv[1:]], cwd=tmp,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            sec = time.perf_counter() - t
            if done.returncode != 0:
                raise SystemExit(f"{shlex.join(argv)} failed: {done.stderr.strip()[-500:]}")
            total += sec
            rows.append(f"| `{shlex.join(argv)}` | {sec:.1f} |")
            print(f"{sec:6.1f} s  {shlex.join(argv)}", file=sys.stderr, flush=True)
    rows.append(f"| **in all** (target {TARGET_S:.0f} s) | **{total:.1f}** |")
    publish(DOC, "OPSPATH", "\n".join([*rows, "", f"{machine()}; one run, {time.strftime('%Y-%m-%d')}."]))


if __name__ == "__main__":
    main()
