"""Sharing a database's timed steps (``ops measure --model``): the rows a device's step factor
rests on, to and from their own CSV or Parquet file (``ops export --steps``; ``ops import``
knows the file by its header). Apart from the calls' file because its rows are another table.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..units import parse_number
from .db_tables import MODEL_CHARS
from .exchange import (DEVICE_FIELDS, check_cells, check_header, device_cells, number, read_rows,
                       row_device, write_rows)

STEP_FIELDS = DEVICE_FIELDS + ("model", "batch_size", "dtype", "step_s", "calls_s", "measured_at")
STEP_FLOATS = ("step_s", "calls_s", "measured_at")
MAX_BATCH = 2**31 - 1  # the column is a 32-bit integer


def export_steps(steps: list[dict], devices: dict, path: str) -> int:
    """``steps`` (``OpDB.load_steps``'s rows) to ``path``, each with its device from ``devices``
    (name -> Device); returns the row count."""
    rows = [{**device_cells(devices[s["device"]]), "model": s["model"],
             "batch_size": int(s["batch_size"]), "dtype": s["dtype"],
             **{f: float(s[f]) for f in STEP_FLOATS}} for s in steps]
    write_rows(path, rows, STEP_FIELDS, STEP_FLOATS, ("batch_size",))
    return len(rows)


def is_steps_file(names) -> bool:
    """Whether a header is a steps file's (a file of calls has no ``model`` column)."""
    return bool(names) and "model" in names and "op" not in names


def import_steps(path: str) -> list[dict]:
    """Every row of a steps file: device (a Device), model, batch_size, dtype and the
    ``STEP_FLOATS``; the first bad row refused in one line."""
    return steps_of(path, *read_rows(path))


def steps_of(path: str, names, rows) -> list[dict]:
    """``read_rows``' answer as steps, checked."""
    check_header(path, names, STEP_FIELDS)
    return [_step(where, r) for where, r in rows]


def _step(where: str, row: dict) -> dict:
    check_cells(where, row, STEP_FIELDS, ("device_name", "device_kind", "model", "dtype"))
    if len(str(row["model"])) > MODEL_CHARS:  # PostgreSQL enforces the width, SQLite would not
        raise ConfigError(f"{where}: model is {len(str(row['model']))} characters long (at most "
                          f"{MODEL_CHARS})")
    try:
        batch = parse_number(row["batch_size"], "batch_size", lo=1, hi=MAX_BATCH, integer=True)
    except ConfigError:
        raise ConfigError(f"{where}: batch_size must be an integer >= 1, got "
                          f"{str(row['batch_size'])[:40]!r}") from None
    times = {f: number(where, f, row[f]) for f in STEP_FLOATS}
    for f in ("step_s", "calls_s"):
        if times[f] <= 0:
            raise ConfigError(f"{where}: {f} must be > 0 s, got {row[f]!r}")
    return {"device": row_device(row), "model": str(row["model"]), "batch_size": int(batch),
            "dtype": str(row["dtype"]), **times}
