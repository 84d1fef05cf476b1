"""More lab runs of committed validation points: the same configuration, measured again.

A point's measurement is the mean of its runs. Where async workers fall into lock-step or
interleave by chance (issue 8), three runs can spread 20-30 %, so their mean is uncertain by
several percent. This measures each named point REPEATS more times, in rounds (one run of every
point, then the next round), so that a slow drift of the machine spreads over all points alike,
and appends each run to OUT as soon as it ends (a crash loses nothing measured). OUT has the
columns of a ``points.csv`` that ``sgdsim validate --measured`` reads, plus the grid and the
time, so the runs can be pooled with the earlier ones (``sgdsim validate --measured A --measured B``).
Every run's whole record, each worker's step times included (what ``w2_phases.py`` and
``stagger_phases.py`` read), goes to OUT's sidecar ``OUT.runs.jsonl``, one line a run.

Each point runs on the lab its case had (sized for the case's largest worker count), with the
case's duration and warm-up. Needs root and a quiet machine.

    python examples/lab/more_runs.py OUT.csv widecnn:widecnn35-async-nooverlap-200:2 ... --repeats 2
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import sys

from sgdsim.errors import ConfigError
from sgdsim.validate.grid import load_grid
from sgdsim.validate.run import default_lab, default_measure, examples_per_s

COLUMNS = ("case", "workers", "measured_runs", "grid", "round", "started_utc")


def sidecar(output: str) -> str:
    """Where the runs' whole records go, beside the CSV."""
    return os.path.splitext(output)[0] + ".runs.jsonl"


def points(specs: list[str]):
    """[(grid name, Case, workers)] from GRID:CASE:W, each checked before any run."""
    out = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ConfigError(f"{spec!r}: write a point as GRID:CASE:WORKERS, e.g. widecnn:widecnn35-async-nooverlap-200:2")
        grid_name, case_name, w = parts
        grid = load_grid(f"examples/grids/lab-{grid_name}.toml")
        case = next((c for c in grid.cases if c.name == case_name), None)
        if case is None:
            raise ConfigError(f"{spec!r}: grid {grid_name} has no case {case_name!r}")
        if not w.isdigit() or int(w) not in case.workers:
            raise ConfigError(f"{spec!r}: case {case_name} has no point at {w} worker(s) "
                              f"(it has {','.join(map(str, case.workers))})")
        out.append((grid_name, case, int(w)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output", help="CSV to write (refused if it exists, unless --append)")
    ap.add_argument("points", nargs="+", help="GRID:CASE:WORKERS (grid as in examples/grids/lab-GRID.toml)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per point (default 2)")
    ap.add_argument("--append", action="store_true", help="add to an existing OUT")
    args = ap.parse_args(argv)
    try:
        todo = points(args.points)
        if args.repeats < 1:
            raise ConfigError(f"--repeats must be at least 1, got {args.repeats}")
        for path in (args.output, sidecar(args.output)):
            if os.path.exists(path) and not args.append:
                raise ConfigError(f"{path} exists: pass --append to add to it")
    except ConfigError as exc:
        print(f"more_runs.py: {exc}", file=sys.stderr)
        return 2
    new = not os.path.exists(args.output)
    with open(args.output, "a", newline="", encoding="utf-8") as f, \
            open(sidecar(args.output), "a", encoding="utf-8") as records:
        writer = csv.writer(f)
        if new:
            writer.writerow(COLUMNS)
        for r in range(args.repeats):
            for i, (grid_name, case, w) in enumerate(todo):
                started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                print(f"round {r + 1}/{args.repeats}, point {i + 1}/{len(todo)}: {case.name} at {w} "
                      f"worker(s), {case.duration_s:g} s ({case.warmup_s:g} s warm-up)", file=sys.stderr, flush=True)
                with default_lab(case) as lab:
                    got = default_measure(case, w, lab)
                value = examples_per_s(got)
                writer.writerow((case.name, w, f"{value:g}", grid_name, r + 1, started))
                f.flush()
                whole = got.to_dict(with_times=True) if hasattr(got, "to_dict") else {}  # a lab run's
                records.write(json.dumps({"grid": grid_name, "round": r + 1, "started_utc": started,
                                          "case": case.name, "measured": value, **whole}) + "\n")
                records.flush()
                print(f"  {value:.2f} examples/s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
