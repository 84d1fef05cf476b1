"""Where the simulator's two workers sit against each other, as async_regimes.py --transfers
shows it for the lab's traced runs: the phase of worker 1's pulls within worker 0's step
(0 or 1: lock-step; 0.5: interleaved), per seed, for one replication of a committed W = 2
point, with the file's joined share (drawn per join, and its fixed step) and without it
(docs/validation/regimes/, finding 9).

    python examples/lab/sim_phases.py widecnn 0          # the wide CNN at batch 64
    python examples/lab/sim_phases.py heldout200b 1      # the wide CNN at batch 32 (held out)
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

import sgdsim
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.profile.io import load_profile
from sgdsim.validate.grid import load_grid
from sgdsim.validate.regimes import pull_phases
from sgdsim.validate.run import calibrated_hardware, measured_runs


def link_spans(timeline, worker: int, prefix: str) -> dict[int, tuple[float, float]]:
    """{step: (first chunk's start, last chunk's end)} of ``worker`` on its ``prefix`` links."""
    res = [i for i, n in enumerate(timeline.resource_names) if n.startswith(prefix)]
    m = (timeline.worker == worker) & np.isin(timeline.resource, res)
    step, lo, hi = timeline.step[m], timeline.start_s[m], timeline.end_s[m]
    return {int(k): (float(lo[step == k].min()), float(hi[step == k].max())) for k in np.unique(step)}


def pull_starts(timeline, worker: int) -> np.ndarray:
    """Each step's first downlink chunk of ``worker``: when its pull started."""
    return np.sort([s for s, _ in link_spans(timeline, worker, "downlink").values()])


def timeline_steps(timeline, worker: int) -> list[tuple[tuple, tuple]]:
    """Each step's (pull, push) of ``worker`` in a simulated timeline: the shape
    ``validate.regimes.step_transfers`` gives traced runs (for ``leg_slopes``)."""
    pulls, pushes = link_spans(timeline, worker, "downlink"), link_spans(timeline, worker, "uplink")
    return [(pulls[k], pushes[k]) for k in sorted(pulls) if k in pushes]


def measured_case(grid: str, index: int, workers: int = 2):
    """A committed grid's case with a measured point of ``workers`` workers: (case, its
    profile, its measured runs by worker count, the hardware file calibrated on its 1-worker
    point)."""
    cases = load_grid(f"examples/grids/lab-{grid}.toml").cases
    if not 0 <= index < len(cases):
        raise ConfigError(f"case index {index}: the grid has {len(cases)} case(s)")
    case = cases[index]
    prof = load_profile(f"docs/validation/{grid}/profiles/{case.name}.json")
    runs = {w: x for (name, w), x in measured_runs(f"docs/validation/{grid}/points.csv").items()
            if name == case.name}
    if workers not in runs:
        raise ConfigError(f"case {case.name!r} has no measured {workers}-worker point")
    return case, prof, runs, calibrated_hardware(case, prof, runs)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid", help="name G of examples/grids/lab-G.toml with docs/validation/G/")
    ap.add_argument("case", type=int, help="the case's index in the grid")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    try:
        case, prof, runs, hw = measured_case(args.grid, args.case)
    except (ConfigError, ProfileError, OSError) as e:
        print(f"sim_phases.py: {f'{e.filename}: {e.strerror}' if isinstance(e, OSError) else e}",
              file=sys.stderr)
        sys.exit(2)
    print(f"{case.name}, W = 2: measured {np.mean(runs[2]):.2f} examples/s")
    fixed = dataclasses.replace(hw, two_way_joined_draws=None)
    none = dataclasses.replace(fixed, two_way_joined=None)
    variants = [("joined draws", hw)] if hw.two_way_joined_draws else []
    for label, h in variants + [("joined step", fixed), ("none", none)]:
        for seed in range(args.seeds):
            p = sgdsim.predict(prof, workers=[2], replications=1, steps=args.steps, seed=seed,
                               timeline=True, **h.predict_kwargs("ps", "async"))[0]
            phase = pull_phases(pull_starts(p.timeline, 0), pull_starts(p.timeline, 1))
            print(f"{label}, seed {seed}: {p.throughput:.2f} examples/s; phase in tenths: "
                  f"{np.histogram(phase, 10, (0, 1))[0].tolist()}", flush=True)


if __name__ == "__main__":
    main()
