"""What ``sgdsim ops stats`` says to run next for the types whose estimator is further from
the data than this machine's repeatability: more shapes of them, and a retest of more rows.

More rows settle a type's estimator: on three committed EPYC grids (runs 19, 35, 36), 30 rows
against 60 of the same grid took max pooling's held-out median from 8.9 % to 6.0 % and its
spread over grids from 2.9-13.6 % to 3.7-9.5 % (``examples/ops/rows_curve.py``); on run 38's
grid, twice the shapes took seven such types 0.3-12 points lower (docs/ops.md §2). A retest of
few rows is itself a noisy bar.
"""
from __future__ import annotations

import shlex
import textwrap

from ..profiler.api import device_of_name
from .collect import samples_measured

RATIO_BAR = 1.5        # held-out median over the retest: as good as repeatability lets one show
RETEST_ROWS = 30       # a retest of fewer rows a type is suggested again with this many
MAX_SAMPLES = 1000     # the most a suggestion asks for (a type's space may be smaller)
WIDTH = 100            # the prose wrapped; the commands stay one line each, to copy


def timing_flags(device: str) -> str:
    """The ``ops measure`` options that time on ``device`` (a device name of the database)
    again: its threads on a CPU other than 1, its CUDA device."""
    timed = device_of_name(device)
    return f" --device {timed[0]}" if timed and timed[0] != "cpu" else _threads_flag(device)


def _threads_flag(device: str) -> str:
    """``--threads N`` for a CPU device of N > 1 threads (``ops retest`` times on CPUs only)."""
    timed = device_of_name(device)
    return f" --threads {timed[1]}" if timed and timed[0] == "cpu" and timed[1] != 1 else ""


def db_flag(db: str | None) -> str:
    """`` --db DB`` for a command printed as a next step (quoted: it runs as printed; a URL's
    password masked: never printed back), or nothing for the default database."""
    from .db import mask

    return f" --db {shlex.quote(mask(db))}" if db else ""


def dtype_flag(dtype: str) -> str:
    """`` --dtype D`` for a grid in another precision than float32, the default."""
    return "" if dtype == "float32" else f" --dtype {dtype}"


def grid_commands(grids: dict[str, list[str]], db: str | None) -> str:
    """``ops measure --grid`` for each precision's types ({dtype: types}): one command a
    precision, since a grid is timed in one type."""
    return "; ".join(f"sgdsim ops measure --grid {','.join(ops)} --samples 30{dtype_flag(dt)}{db_flag(db)}"
                     for dt, ops in grids.items())


def next_steps(flagged: list[dict], db: str | None, several_devices: bool = False) -> list[str]:
    """Lines for the types above ``RATIO_BAR``; ``flagged``: dicts with device, op, dtype,
    rows (the grid's) and retest_rows. One block per (device, dtype); ``several_devices``:
    the database holds more than one, so training names the device."""
    where = db_flag(db)
    lines: list[str] = []
    groups: dict[tuple[str, str], list[dict]] = {}
    for f in flagged:
        groups.setdefault((f["device"], f["dtype"]), []).append(f)
    for (device, dtype), fs in groups.items():
        names = [f["op"] for f in fs]
        ops = ",".join(names)
        dt = dtype_flag(dtype)
        dev = f" --device {shlex.quote(device)}" if several_devices else ""
        on = timing_flags(device)
        lines += textwrap.wrap(
            f"above {RATIO_BAR}x ({device}, {dtype}): {', '.join(names)}. More shapes of a "
            "type settle its estimator (docs/ops.md §2); on that machine, to take each to twice "
            "its shapes (add the grid's --seed: the shapes stored are drawn again and skipped) "
            "and train them again:", WIDTH, break_on_hyphens=False)
        by_samples: dict[int, list[str]] = {}
        for f in fs:
            n = min(MAX_SAMPLES, 2 * samples_measured(f["op"], f["rows"], MAX_SAMPLES))
            by_samples.setdefault(n, []).append(f["op"])
        for n, group in sorted(by_samples.items()):
            lines.append(f"  sgdsim ops measure --grid {','.join(group)} --samples {n}{on}{dt}{where}")
        lines.append(f"  sgdsim ops train{dev} --op {ops} --budget 10 --members 3{where}")
        # (a type of fewer rows than that was retested whole: no more to ask for)
        few = [f["op"] for f in fs if (f["retest_rows"] or 0) < min(RETEST_ROWS, f["rows"])]
        if few:
            lines.append(f"  sgdsim ops retest --op {','.join(few)} --samples {RETEST_ROWS}"
                         f"{_threads_flag(device)}{where}"
                         "   # a retest of fewer rows is a noisy bar")
    return lines
