"""What a user waits for: whole `sgdsim` processes (import, simulation, output), timed as run.

Each command runs once untimed, then ``--runs`` times (default 3) in a fresh process; the
table gives the minimum, median and maximum wall time and the largest peak RSS. Python writes
and reuses its bytecode caches as it does by default (``PYTHONDONTWRITEBYTECODE`` is dropped
from the children's environment): a user's second command does not compile sgdsim's modules. Prints a Markdown table;
``--write`` puts it into docs/benchmarks.md between the USER markers. Targets: issue 36 (and 37's large-model prediction).

    python benchmarks/bench_user.py [--runs N] [--write]
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time

from docblock import publish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
R50 = os.path.join("examples", "profiles", "resnet50.json")
POWERS = "1,2,4,8,16,32,64"
# (what, target, arguments of `sgdsim`)
CASES = [
    ("one ResNet-50 point, W = 8, 10 Gbps", "0.4 s", ["predict", R50, "--workers", "8", "--bandwidth", "10Gbps"]),
    ("ResNet-50, W = 1, 2, 4 ... 64, 10 Gbps", "1 s", ["predict", R50, "--workers", POWERS, "--bandwidth", "10Gbps"]),
    ("ResNet-50, W = 1, 2, 4 ... 64, 1 Gbps", "1 s", ["predict", R50, "--workers", POWERS, "--bandwidth", "1Gbps"]),
    ("ResNet-50, W = 1-16, 1 Gbps", "1 s", ["predict", R50, "--workers", "1-16", "--bandwidth", "1Gbps"]),
    ("the README's sweep: W = 1, 2, 4, 8, 16, 10 Gbps", "-",
     ["predict", R50, "--workers", "1,2,4,8,16", "--bandwidth", "10Gbps"]),
    ("sync PS, 128 workers on 4-GPU nodes, 32 PS, 10 Gbps", "5 s",
     ["predict", R50, "--workers", "128", "--mode", "sync", "--gpus-per-node", "4", "--intra-bandwidth", "16GB/s",
      "--ps-count", "32", "--bandwidth", "10Gbps"]),
    ("DDP on 1,024 GPUs, hierarchical, 25 MB buckets", "1 s",
     ["predict", R50, "--workers", "1024", "--arch", "allreduce", "--mode", "sync", "--collective", "hierarchical",
      "--gpus-per-node", "8", "--intra-bandwidth", "150GB/s", "--bandwidth", "100Gbps", "--bucket-size", "25MB"]),
    ("GPT 1 T on 3,072 A100s (tp 8, pp 64, dp 6), issue 37", "10 s",
     ["predict", "gpt:layers=128,hidden=25600,heads=160,seq=2048,vocab=51200", "--workers", "3072",
      "--layout", "tp=8,pp=64,mb=1,batch=3072"]),
    ("plan a 175 B model over 64-1,024 A100s, issue 37", "60 s",
     ["plan", "gpt:layers=96,hidden=12288,heads=96,seq=2048,vocab=51200", "--workers", "64-1024",
      "--layout", "batch=1536"]),
]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one whole process."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sgdsim.cli", *argv], cwd=ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"sgdsim {' '.join(argv)} failed: {proc.stderr.read().decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    lines = ["| what | target | wall min / median / max (s) | peak RSS (MB) |", "|---|---:|---:|---:|"]
    for what, target, argv in CASES:
        run(argv)  # untimed: bytecode caches written, files in the page cache
        walls, rss = zip(*(run(argv) for _ in range(runs)))
        lines.append(f"| {what} | {target} | {min(walls):.2f} / {statistics.median(walls):.2f} / "
                     f"{max(walls):.2f} | {max(rss):.0f} |")
    lines += ["", f"Whole processes (`python -m sgdsim.cli ...`, import included), {runs} runs each "
              "after an untimed one, with Python's bytecode caches. "
              f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores, "
              f"Python {platform.python_version()}), with `python benchmarks/bench_user.py --write`."]
    publish(DOC, "USER", "\n".join(lines))


if __name__ == "__main__":
    main()
