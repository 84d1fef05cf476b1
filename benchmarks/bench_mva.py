"""MVA solver speed and Bard-Schweitzer accuracy (sgdsim.analytic.mva, docs/mva.md).

(a) mva_symmetric called separately for every K = 1..1024 (sum of the times), and the single
    symmetric_curve call that yields all of them; compiled and plain Python.
(b) mva_exact on heterogeneous async-SGD networks for K = 4..20 (L = 4 stations).
(c) mva_schweitzer against mva_exact on 200 random async-SGD-like networks, K in 2..12, each
    solved with FCFS (Eq. 2) and with PS (Eq. 1) links: relative error of job throughput.

Prints Markdown; ``--write`` also puts it into docs/mva.md between the MVA-BENCH markers.

    python benchmarks/bench_mva.py [--write]
"""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

from sgdsim.analytic.mva import EXACT_LIMIT, mva_exact, mva_schweitzer, mva_symmetric
from sgdsim.compiled import HAVE_COMPILED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "mva.md")
K_SYM = 1024
K_EXACT = (4, 8, 12, 14, 16, 18, 19, 20)
N_NETWORKS = 200
SEED = 2022

SYMMETRIC_CHILD = r"""
import json, sys, time
from sgdsim.analytic.mva import mva_symmetric, symmetric_curve
row, kinds, K = [0.1, 0.02, 0.004, 0.02], ["delay", "fcfs", "ps", "fcfs"], int(sys.argv[1])
mva_symmetric(row, kinds, 2)  # loads (or compiles) the kernel
t = time.perf_counter()
for k in range(1, K + 1):
    mva_symmetric(row, kinds, k)
each = time.perf_counter() - t
t = time.perf_counter()
one = mva_symmetric(row, kinds, K)
last = time.perf_counter() - t
t = time.perf_counter()
symmetric_curve(row, kinds, K)
curve = time.perf_counter() - t
print(json.dumps({"each": each, "last": last, "curve": curve}))
"""


def async_sgd_network(rng: np.random.Generator, K: int, link: str):
    """Fig. 5 with heterogeneous workers: per-class compute (delay), uplink, PS update (ps),
    downlink. Link time M/B is the same for all workers; the compute/communication ratio is
    log-uniform over two decades, so the links range from idle to saturated."""
    comm = 10 ** rng.uniform(-2.0, 0.0)  # M/B relative to a mean compute time of 1
    compute = rng.uniform(0.5, 1.5, K)
    update = rng.uniform(0.02, 0.2) * comm
    S = np.column_stack([compute, np.full(K, comm), np.full(K, update), np.full(K, comm)])
    return S, ["delay", link, "ps", link]


def bench_symmetric(pure: bool) -> dict:
    env = dict(os.environ, SGDSIM_PURE_PYTHON="1" if pure else "0")
    out = subprocess.run([sys.executable, "-c", SYMMETRIC_CHILD, str(K_SYM)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_exact() -> list[tuple[int, float]]:
    rng = np.random.default_rng(SEED)
    rows = []
    for K in K_EXACT:
        S, kinds = async_sgd_network(rng, K, "fcfs")
        repeats = 3 if K <= 16 else 1
        best = min(_timed(mva_exact, S, kinds) for _ in range(repeats))
        rows.append((K, best))
    return rows


def _timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def bench_schweitzer() -> dict:
    rng = np.random.default_rng(SEED)
    errors = {"fcfs": [], "ps": []}
    per_class, iters, worst = [], [], (0.0, None)
    for _ in range(N_NETWORKS):
        K = int(rng.integers(2, 13))
        for link in ("fcfs", "ps"):
            S, kinds = async_sgd_network(rng, K, link)
            ex, ap = mva_exact(S, kinds), mva_schweitzer(S, kinds)
            err = abs(ap.throughput / ex.throughput - 1)
            errors[link].append(err)
            per_class.append(np.max(np.abs(ap.X / ex.X - 1)))
            iters.append(ap.iterations)
            if err > worst[0]:
                util = float(ex.U[:, 1].sum())
                worst = (err, f"K = {K}, {link} links, uplink utilization {util:.2f}")
    return {"errors": errors, "per_class_max": max(per_class), "iters": iters, "worst": worst[1]}


def table(sym: dict, sym_pure: dict, exact: list, sw: dict) -> str:
    core = "compiled" if HAVE_COMPILED else "pure Python"
    lines = [f"**(a) Symmetric, K = 1..{K_SYM}** (L = 4)", "",
             "| core | {K_SYM} separate calls, total (ms) | one call K = 1024 (ms) "
             "| symmetric_curve K = 1..1024 (ms) |".replace("{K_SYM}", str(K_SYM)),
             "|---|---:|---:|---:|"]
    for name, r in ((core, sym), ("pure Python", sym_pure)):
        lines.append(f"| {name} | {r['each'] * 1e3:.1f} | {r['last'] * 1e3:.2f} | {r['curve'] * 1e3:.2f} |")
    lines += ["", "**(b) Exact, heterogeneous workers** (async-SGD network, L = 4, FCFS links)", "",
              "| K | population vectors | time (s) |", "|---:|---:|---:|"]
    for K, t in exact:
        mark = " ← EXACT_LIMIT" if K == EXACT_LIMIT else ""
        lines.append(f"| {K} | {2 ** K:,} | {t:.3f}{mark} |")
    lines += ["", f"**(c) Schweitzer vs exact**, {N_NETWORKS} random async-SGD-like networks "
              "(K in 2..12), each with FCFS and with PS links: relative error of job throughput", "",
              "| links | mean | median | 95th pct | max |", "|---|---:|---:|---:|---:|"]
    errs = sw["errors"]
    for link, e in (("fcfs (Eq. 2)", errs["fcfs"]), ("ps (Eq. 1)", errs["ps"]),
                    ("all", errs["fcfs"] + errs["ps"])):
        e = np.asarray(e) * 100
        lines.append(f"| {link} | {e.mean():.2f} % | {np.median(e):.2f} % "
                     f"| {np.percentile(e, 95):.2f} % | {e.max():.2f} % |")
    it = np.asarray(sw["iters"])
    lines += ["", f"Worst case: {sw['worst']}. Largest per-worker throughput error: "
              f"{sw['per_class_max'] * 100:.2f} %. Fixed-point iterations (tol 1e-10): "
              f"mean {it.mean():.0f}, max {it.max()}.", "",
              f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores, "
              f"Python {platform.python_version()}, numpy {np.__version__}, {core} kernel in this "
              f"process), with `python benchmarks/bench_mva.py --write`."]
    return "\n".join(lines)


def main() -> None:
    mva_symmetric([1.0, 1.0], ["delay", "ps"], 2)  # kernel load outside every timing
    text = table(bench_symmetric(False), bench_symmetric(True), bench_exact(), bench_schweitzer())
    print(text)
    if "--write" in sys.argv:
        doc = open(DOC, encoding="utf-8").read()
        doc, n = re.subn(r"(<!-- MVA-BENCH -->\n).*?(<!-- /MVA-BENCH -->)",
                         lambda m: m.group(1) + text + "\n" + m.group(2), doc, flags=re.S)
        if n != 1:
            sys.exit(f"{DOC}: no <!-- MVA-BENCH --> ... <!-- /MVA-BENCH --> block")
        open(DOC, "w", encoding="utf-8").write(doc)


if __name__ == "__main__":
    main()
