"""Seed-to-seed spread of the default prediction: random starts against the even design.

On issue 8's lab cases (docs/validation/), each calibrated on its measured 1-worker runs as
``sgdsim validate`` does, the default prediction (automatic replications) is made with seeds
0..N-1, once with random start offsets and once with the design of ``sim/starts.py``; the table
gives the mean over seeds, their relative standard deviation and range, and the measured mean.

    python examples/lab/start_design.py                   # lab:mlp-10mb, async, no overlap
    python examples/lab/start_design.py --group cnn --case 0 --seeds 8
"""
from __future__ import annotations

import argparse
import csv
import dataclasses

import numpy as np

import sgdsim.replicate as replicate
from sgdsim.predict import predict
from sgdsim.profile.io import load_profile
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import calibrated_hardware

GRIDS = {"async": "lab-async", "cnn": "lab-cnn", "widecnn": "lab-widecnn", "2ps": "lab-2ps"}


def calibrated_case(group: str, index: int):
    """(case, profile, predict keyword arguments, measured runs by worker count)."""
    case = load_grid(f"examples/grids/{GRIDS[group]}.toml").cases[index]
    runs = {int(r["workers"]): [float(x) for x in r["measured_runs"].split(";")]
            for r in csv.DictReader(open(f"docs/validation/{group}/points.csv"))
            if r["model"] == "fine" and r["case"] == case.name}
    prof = load_profile(f"docs/validation/{group}/profiles/{case.name}.json")
    _, hw = calibrated_hardware(case, prof, runs)
    net = dataclasses.replace(case, hardware_spec=hw, predict_bandwidth_bps=None).network()
    return case, prof, net, runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", default="async", choices=sorted(GRIDS))
    ap.add_argument("--case", type=int, default=0, help="index of the case in its grid")
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    case, prof, net, runs = calibrated_case(args.group, args.case)
    design = replicate.start_points
    print(f"{case.name}: default predictions over seeds 0-{args.seeds - 1}\n")
    print("| starts | W | mean | sd over seeds | min | max | measured |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, points in (("random", lambda seed, dims, idx: [() for _ in idx]), ("design", design)):
        replicate.start_points = points
        for W in case.workers[1:]:
            xs = np.array([predict(prof, workers=[W], **net, mode=case.mode, arch=case.arch,
                                   sharing=case.sharing, seed=s)[0].throughput
                           for s in range(args.seeds)])
            print(f"| {name} | {W} | {xs.mean():.2f} | {xs.std(ddof=1) / xs.mean():.1%} | "
                  f"{xs.min():.2f} | {xs.max():.2f} | {np.mean(runs[W]):.2f} |")
    replicate.start_points = design


if __name__ == "__main__":
    main()
