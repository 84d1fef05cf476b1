"""``sgdsim validate`` of a grid that also keeps every lab run's raw record.

Beside the usual outputs, OUT/runs.jsonl gets one JSON line per run as it ends: the
``TrainResult`` with every step's completion time and each process's CPU seconds since t0
(``cpu_s``, servers first), and the machine's 1-minute load average before the run, so a
busy machine shows in the record. The CPU seconds tell whether a host's CPU, not its NIC, was
the bottleneck at a point. Needs root and a quiet machine.

    python examples/lab/measure_grid.py examples/grids/lab-torch.toml -o docs/validation/torch
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from sgdsim.errors import SgdsimError
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import default_measure, run_validation


def logging_measure(path: str):
    def measure(case, workers: int, lab):
        load = os.getloadavg()[0]
        started = time.time()
        result = default_measure(case, workers, lab)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"case": case.name, "workers": workers, "load_before": load,
                                "started_unix": started,
                                **result.to_dict(with_times=True)}) + "\n")
        return result
    return measure


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid")
    ap.add_argument("-o", "--outdir", required=True)
    ap.add_argument("--models", default="fine,coarse")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    try:
        grid = load_grid(args.grid)
        os.makedirs(args.outdir, exist_ok=True)
        runs = os.path.join(args.outdir, "runs.jsonl")
        if os.path.exists(runs) and not args.force:
            raise SgdsimError(f"{runs} exists (use --force to add to a new run)")
        if os.path.exists(runs):
            os.remove(runs)
        run_validation(grid, args.outdir, models=args.models, force=args.force,
                       measure_fn=logging_measure(runs))
    except SgdsimError as exc:
        print(f"measure_grid: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
