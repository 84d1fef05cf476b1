"""Multi-GPU all-reduce predictions (issue 12): ResNet-50 DDP on nodes of 8 devices, NVLink
150 GB/s inside, 100 Gbit/s between, hierarchical all-reduce of 25 MB buckets.

    python benchmarks/bench_multigpu.py [--write]    (--write updates docs/benchmarks.md)

Targets: 64 GPUs in 5 s, 1,024 GPUs in 60 s (the simulator, a whole ``sgdsim predict``
including start-up), the coarse model at 1,024 GPUs in 50 ms.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import sgdsim
from docblock import publish

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
OPTS = ["--arch", "allreduce", "--mode", "sync", "--collective", "hierarchical",
        "--gpus-per-node", "8", "--intra-bandwidth", "150GB/s", "--bandwidth", "100Gbps",
        "--bucket-size", "25MB"]
KW = dict(arch="allreduce", mode="sync", collective="hierarchical", gpus_per_node=8,
          intra_bandwidth="150GB/s", bandwidth="100Gbps", bucket_size="25MB")


def cli_s(workers: str, model: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", PROFILE, *OPTS, "--workers",
                    workers, "--model", model, "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - t


def coarse_ms(workers: int, repeat: int = 20) -> float:
    prof = sgdsim.load_profile(PROFILE)
    sgdsim.predict(prof, workers=workers, model="coarse", **KW)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        sgdsim.predict(prof, workers=workers, model="coarse", **KW)
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main() -> None:
    cli_s("8", "fine")  # untimed: the first process after an install reads every file cold
    rows = ["| case | time | target |", "|---|---:|---:|"]
    for workers, target in (("64", "5 s"), ("8,16,64", "-"), ("1024", "60 s")):
        rows.append(f"| simulator, `sgdsim predict --workers {workers}` (whole command) | "
                    f"{cli_s(workers, 'fine'):.1f} s | {target} |")
    rows.append(f"| coarse model, 1,024 GPUs (one call of `sgdsim.predict`) | "
                f"{coarse_ms(1024):.1f} ms | 50 ms |")
    every_node = ",".join(str(8 * n) for n in range(1, 129))
    rows.append(f"| coarse model, `sgdsim predict --workers 8,16,...,1024` (whole command, 128 "
                f"points) | {cli_s(every_node, 'coarse'):.1f} s | - |")
    text = "\n".join(rows) + (f"\n\nResNet-50 ({os.path.basename(PROFILE)}), options `{' '.join(OPTS)}`; "
                              f"measured {time.strftime('%Y-%m-%d')} on 2 cores with "
                              "`python benchmarks/bench_multigpu.py`.")
    publish(os.path.join(ROOT, "docs", "benchmarks.md"), "MULTIGPU-BENCH", text)


if __name__ == "__main__":
    main()
