"""Today's estimator against a committed run's measured steps: a replay, not a new measurement.

A run of §5 in docs/ops.md committed three things: its grid (``db-grid-*.csv``), the models'
own calls (``db-models-*.csv``) and the measured steps (``models-*-keep/models.csv``, the
median plain step of each case). This trains today's estimator on that grid exactly as the
README says (``sgdsim ops train --budget B --members M``) and estimates each case's step from
the grid's estimators only (untyped glue calls from the models' database, as
``estimate_models.py`` does), then prints both errors against the committed median: the one
the run committed and today's. Nothing is timed, so the machine's phase does not enter.

    python examples/ops/replay_steps.py docs/validation/ops/db-grid-epyc-2026-12-03-run13.csv \
        docs/validation/ops/db-models-epyc-2026-12-03-run13.csv \
        docs/validation/ops/models-epyc-2026-12-03-run13-keep/models.csv
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

from estimate_models import GridOnly, step_of  # beside this script
from run_main import run_main
from sgdsim.errors import ConfigError
from sgdsim.ops.db import open_db
from sgdsim.ops.estimate import estimate_profile


def _sgdsim(*args: str) -> None:
    """One sgdsim command; its own one-line refusal (already on stderr) ends this script too."""
    if subprocess.run([sys.executable, "-m", "sgdsim.cli", *args],
                      stdout=subprocess.DEVNULL).returncode != 0:
        raise SystemExit(2)


def _device(db) -> str:
    """The device the committed rows were measured on (one per committed run)."""
    devices = [d.name for d in db.devices()]
    if len(devices) != 1:
        raise ConfigError(f"expected the rows of one device, found {devices}")
    return devices[0]


def replay(grid_csv: str, models_csv: str, steps_csv: str, budget: int, members: int) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        grid, models = f"{tmp}/grid.sqlite", f"{tmp}/models.sqlite"
        _sgdsim("ops", "import", grid_csv, "--db", grid)
        _sgdsim("ops", "import", models_csv, "--db", models)
        _sgdsim("ops", "train", "--db", grid, "--budget", str(budget), "--members", str(members))
        rows = []
        with open_db(models, create=False) as mdb, open_db(grid, create=False) as gdb:
            device = _device(gdb)
            with open(steps_csv, encoding="utf-8") as fh:
                for r in csv.DictReader(fh):
                    est = estimate_profile(r["model"], int(r["batch"]), GridOnly(mdb, gdb), device,
                                          step_factor=False)
                    measured = float(r["measured_ms"])
                    rows.append((r["model"], int(r["batch"]), measured,
                                 float(r["estimator_ms"]) / measured - 1,
                                 step_of(est) * 1e3 / measured - 1))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid_csv")
    ap.add_argument("models_csv")
    ap.add_argument("steps_csv", help="a committed models.csv (its measured_ms is the reference)")
    ap.add_argument("--budget", type=int, default=5)
    ap.add_argument("--members", type=int, default=3)
    args = ap.parse_args()
    for path in (args.grid_csv, args.models_csv, args.steps_csv):
        if not Path(path).is_file():
            raise ConfigError(f"no such file: {path}")
    rows = replay(args.grid_csv, args.models_csv, args.steps_csv, args.budget, args.members)
    print("| model | batch | measured step ms (committed) | estimator error as committed | today |")
    print("|---|---|---:|---:|---:|")
    for model, batch, ms, then, now in rows:
        print(f"| {model} | {batch} | {ms:.2f} | {then:+.1%} | {now:+.1%} |")
    n = len(rows)
    print(f"\nMean |error|: as committed {sum(abs(r[3]) for r in rows) / n:.1%}, "
          f"today {sum(abs(r[4]) for r in rows) / n:.1%} ({n} cases)")


if __name__ == "__main__":
    run_main(main)
