"""Where two async workers sit against each other, in the real runs and in the simulator's.

For each GRID:CASE with a committed two-worker run: the folded phase of worker 1's step ends
within worker 0's steps (0: the two finish together, lock-step; 0.5: half a step apart,
interleaved; ``validate.regimes.folded``), over the run's measured window, as shares of the
steps per band and their mean; then the same for single simulated replications of the point
(the case calibrated on its one-worker run, as ``sgdsim validate`` does; one start point per
seed, as the point's own replications draw them; by default as long as those, ``--steps``
for longer), each with its throughput. A step ends, in
the simulator, when its last push chunk ends; in the lab, when the worker logs it.

    python examples/lab/w2_phases.py torch-b:torch-mlp5-ps-async-200 torch-b:torch-cnn4-ps-async-100 \
        torch-c:torch-mlp3-b32-ps-async-100 torch-c:torch-cnn6-b8-ps-async-100
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from sgdsim.errors import SgdsimError
from sgdsim.predict import predict
from sgdsim.validate.grid import load_grid
from sgdsim.validate.regimes import folded, phase_steps
from sim_phases import link_spans, measured_case
from w2_regimes import check

W = 2
BANDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def real_phases(grid: str, case: str) -> list[np.ndarray]:
    """Folded phases of each committed two-worker run of ``case`` (its measured window)."""
    out = []
    with open(f"docs/validation/{grid}/runs.jsonl", encoding="utf-8") as f:
        for line in f:
            run = json.loads(line)
            if run["case"] != case or run["workers"] != W:
                continue
            start = run["duration_s"] - run["window_s"]
            a, b = (np.asarray(t, float) for t in run["step_times_s"])
            out.append(folded(phase_steps(a[a >= start], b[b >= start])[0]))
    return out


def simulated_phases(case, prof, hw, seeds: int, steps: int) -> list[tuple[float, np.ndarray]]:
    """(throughput, folded phases) of single replications of ``steps`` steps per worker after
    the warm-up, one per seed, of ``case`` with its profile and calibrated hardware file."""
    out = []
    for seed in range(seeds):
        p = predict(prof, workers=[W], replications=1, seed=seed, steps=steps, timeline=True,
                    **hw.predict_kwargs(case.arch, case.mode))[0]
        ends = [np.sort([e for _, e in link_spans(p.timeline, w, "uplink").values()]) for w in (0, 1)]
        out.append((p.throughput, folded(phase_steps(*ends)[0])))
    return out


def row(label: str, phases: np.ndarray) -> str:
    shares = np.histogram(phases, BANDS)[0] / max(len(phases), 1)
    return (f"| {label} | {len(phases)} | " + " | ".join(f"{x:.2f}" for x in shares)
            + f" | {phases.mean():.2f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("points", nargs="+", help="GRID:CASE")
    ap.add_argument("--seeds", type=int, default=8, help="simulated replications (default 8)")
    ap.add_argument("--steps", type=int, default=50,
                    help="steps per worker of each (default 50: a W = 2 point's replications)")
    args = ap.parse_args(argv)
    check(args.points)
    bands = " | ".join(f"{a:g}-{b:g}" for a, b in zip(BANDS, BANDS[1:]))
    for spec in args.points:
        grid, name = spec.split(":")
        try:
            index = [c.name for c in load_grid(f"examples/grids/lab-{grid}.toml").cases].index(name)
            case, prof, runs, hw = measured_case(grid, index)  # calibrated once
            sims = simulated_phases(case, prof, hw, args.seeds, args.steps)
        except SgdsimError as exc:
            print(f"w2_phases.py: error: {spec}: {exc}", file=sys.stderr)
            sys.exit(2)
        print(f"\n{spec}: real {np.mean(runs[W]):.2f} examples/s, simulated "
              f"{np.mean([x for x, _ in sims]):.2f} (single runs {min(x for x, _ in sims):.1f}"
              f"-{max(x for x, _ in sims):.1f})\n")
        print(f"| run | steps | {bands} | mean |\n|---|---:|{'---:|' * (len(BANDS) - 1)}---:|")
        for k, ph in enumerate(real_phases(grid, name)):
            print(row(f"real {k + 1}", ph))
        for seed, (x, ph) in enumerate(sims):
            print(row(f"simulated, seed {seed} ({x:.1f})", ph))


if __name__ == "__main__":
    main()
