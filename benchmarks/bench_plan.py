"""Time of ``sgdsim plan`` on the bundled ResNet-50 profile (issue 9's targets).

- coarse pass: 3 strategies (async PS, sync PS, ring all-reduce) x W = 1-64 x 2 bandwidths
  (1 and 10 Gbps), target <= 1 s; also the default candidates (async PS with 1-4 servers);
- the whole plan with the simulator checking 5 finalists, target <= 60 s on 2 cores, for each
  objective.

Warm: the compiled simulator is loaded by one untimed call first. ``--write`` puts the table
into docs/benchmarks.md between the PLAN markers.

    python benchmarks/bench_plan.py [--write]
"""
from __future__ import annotations

import os
import platform
import time

from docblock import publish

import sgdsim
from sgdsim.evaluate import Cluster, Control, Job, LocalPool
from sgdsim.plan.objective import Objective
from sgdsim.plan.search import PlanRequest, candidates, coarse_pass, plan
from sgdsim.spec import Link

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.path.join(ROOT, "examples", "profiles", "resnet50.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
OBJECTIVES = {"target epoch time 2 h": Objective("target", target_epoch_time_s=7200.0),
              "budget 5 per epoch": Objective("budget", budget_per_epoch=5.0),
              "frontier": Objective("frontier")}


def request(max_ps: int, objective: Objective) -> PlanRequest:
    job = Job.of(sgdsim.load_profile(PROFILE))
    return PlanRequest(job, candidates(["async-ps", "sync-ps", "allreduce"], max_ps),
                       (Cluster(Link(1e9 / 8)), Cluster(Link(10e9 / 8))), tuple(range(1, 65)), 1_281_167, objective,
                       control=Control())


def best_s(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    sgdsim.predict(PROFILE, workers=2, bandwidth="1Gbps", replications=1, steps=2, warmup=0)
    rows = ["| what | configurations | wall (s) |", "|---|---:|---:|"]
    for max_ps in (1, 4):
        req = request(max_ps, OBJECTIVES["frontier"])
        n = len(coarse_pass(req)[0])
        rows.append(f"| coarse pass, {len(req.strategies)} strategies x W = 1-64 x 2 bandwidths | "
                    f"{n} | {best_s(lambda: coarse_pass(req)):.3f} |")
    pool = LocalPool(os.cpu_count() or 1)
    for name, obj in OBJECTIVES.items():
        req = request(4, obj)
        t = time.perf_counter()
        result = plan(req, pool)
        wall = time.perf_counter() - t
        rec = result.recommended
        what = "no objective" if rec is None and obj.kind == "frontier" else (
            f"{rec.strategy.label} W={rec.workers} @ {rec.cluster.link.bandwidth_Bps * 8 / 1e9:g} Gbps" if rec else "none")
        rows.append(f"| whole plan, {name}, {len(result.checked)} finalists simulated "
                    f"(answer: {what}) | {len(result.points)} | {wall:.1f} |")
    rows += ["", f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} "
             f"cores, Python {platform.python_version()}) with `python benchmarks/bench_plan.py --write`."]
    publish(DOC, "PLAN", "\n".join(rows))


if __name__ == "__main__":
    main()
