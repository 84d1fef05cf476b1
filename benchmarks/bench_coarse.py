"""Coarse model speed: W = 1..1024 identical workers, async PS (Eqs. 1-6), one sweep.

    python benchmarks/bench_coarse.py [--write]    (--write updates docs/coarse.md)
"""
from __future__ import annotations

import os
import re
import sys
import time

from sgdsim.analytic.async_ps import async_ps, async_ps_sweep
from sgdsim.analytic.coarse_profile import from_profile
from sgdsim.analytic.sync import sync_ps
from sgdsim.profile.io import load_profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "coarse.md")


def best_ms(fn, repeat: int = 5) -> float:
    fn()  # loads the compiled kernels
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def main() -> None:
    rows = ["| case | time (ms) |", "|---|---:|"]
    for name in ("resnet50-nooverlap", "resnet50"):
        c = from_profile(load_profile(os.path.join(ROOT, "examples", "profiles", f"{name}.json")))
        ms = best_ms(lambda: async_ps_sweep(c, 10e9 / 8, range(1, 1025)))
        rows.append(f"| async PS, Eq. 5 threshold{' + Eq. 6 overlap' if c.overlap else ''}, "
                    f"W = 1..1024 ({name}) | {ms:.1f} |")
    ms = best_ms(lambda: [sync_ps([(c, K)], 10e9 / 8) for K in range(1, 1025)])
    rows.append(f"| sync PS hybrid (Eq. 9), W = 1..1024 | {ms:.1f} |")
    slow = c.__class__(c.model_bytes, 2 * c.forward_s, 2 * c.backward_s, 0.0, c.batch_size)
    for K in (8, 16, 17, 64):
        ms = best_ms(lambda: async_ps([(c, K // 2), (slow, K - K // 2)], 10e9 / 8, overlap=False), 2)
        how = "exact MVA" if K <= 16 else "Schweitzer"
        rows.append(f"| async PS heterogeneous (two classes), {how}, K = {K}, two solves for Eq. 5 | {ms:.0f} |")
    text = "\n".join(rows) + f"\n\nMeasured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_coarse.py`."
    print(text)
    if "--write" in sys.argv:
        doc = open(DOC, encoding="utf-8").read()
        doc = re.sub(r"(<!-- COARSE-BENCH -->\n).*?(\n<!-- /COARSE-BENCH -->)",
                     lambda m: m.group(1) + text + m.group(2), doc, flags=re.S)
        open(DOC, "w", encoding="utf-8").write(doc)


if __name__ == "__main__":
    main()
