"""Sharing databases: records to and from CSV (Parquet where pyarrow is installed).

CSV floats are written with ``repr`` and Parquet keeps float64, so a round trip is exact. Every
row is checked on import and a bad one is refused with its file, line and field, before anything
is written to a database.
"""
from __future__ import annotations

import csv
import json
import os

from ..errors import ConfigError
from ..units import parse_number
from .optypes import complete
from .records import Device, OpRecord, params_key

DEVICE_FIELDS = ("device_name", "device_kind", "device_framework", "device_driver")
FIELDS = DEVICE_FIELDS + ("op", "params", "dtype", "fwd_s", "bwd_s", "samples", "fwd_spread",
                          "bwd_spread", "measured_at")
FLOATS = ("fwd_s", "bwd_s", "fwd_spread", "bwd_spread", "measured_at")
FLAGS = ("fwd_bound", "bwd_bound")  # optional columns (files written before they existed lack them)
REFS = ("fwd_ref_s", "bwd_ref_s")  # optional too: the reference's seconds (ops/reference.py)
OPTIONAL = FLAGS + REFS
MAX_NUMBER = 1e15  # seconds (a time, or the unix date of a measurement), or a spread
MAX_PARAM = 1e18  # an operator parameter (a size, a stride)
MAX_INT64 = 2**63 - 1


def device_cells(device: Device) -> dict:
    """A device as its file columns (``DEVICE_FIELDS``); ``row_device`` reads them back."""
    return dict(zip(DEVICE_FIELDS, (device.name, device.kind, device.framework, device.driver)))


def _row(r: OpRecord) -> dict:
    return {**device_cells(r.device), "op": r.op, "params": params_key(r.params), "dtype": r.dtype,
            **{f: float(getattr(r, f)) for f in FLOATS + REFS}, "samples": int(r.samples),
            **{f: int(getattr(r, f)) for f in FLAGS}}


def export_records(records, path: str) -> int:
    """Write ``records`` to ``path`` (.parquet: Parquet, else CSV); returns the row count."""
    rows = [_row(r) for r in records]
    write_rows(path, rows, FIELDS + OPTIONAL, FLOATS + REFS, ("samples",) + FLAGS)
    return len(rows)


def write_rows(path: str, rows: list[dict], fields: tuple, floats: tuple, ints: tuple) -> None:
    """``rows`` to ``path`` (.parquet: Parquet, else CSV, floats exact by ``repr``). Written
    beside and renamed, so an interrupted export never leaves half a file."""
    parquet = path.endswith(".parquet")
    pa, pq = pyarrow_modules() if parquet else (None, None)
    partial = f"{path}.partial"
    try:
        if parquet:
            kinds = {f: pa.float64() for f in floats} | {f: pa.int64() for f in ints}
            schema = pa.schema([(f, kinds.get(f, pa.string())) for f in fields])
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), partial)
        else:
            with open(partial, "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=fields)
                w.writeheader()
                w.writerows({**r, **{f: repr(r[f]) for f in floats}} for r in rows)
        os.replace(partial, path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def import_records(path: str) -> list[OpRecord]:
    """Every row of ``path`` as a record; the first bad row refused in one line."""
    return records_of(path, *read_rows(path))


def records_of(path: str, names, rows) -> list[OpRecord]:
    """``read_rows``' answer as records, checked."""
    check_header(path, names, FIELDS, OPTIONAL)
    return [_record(where, r) for where, r in rows]


def read_rows(path: str) -> tuple[list[str], list[tuple[str, dict]]]:
    """(the header, [(where, row)]) of a CSV or Parquet file, unchecked."""
    if path.endswith(".parquet"):
        _, pq = pyarrow_modules()
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
            raise ConfigError(f"{path}: not a readable Parquet file ({_first(exc)})") from None
        return table.column_names, [(f"{path}, row {i + 1}", r) for i, r in enumerate(table.to_pylist())]
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            names = reader.fieldnames or []
            return names, [(f"{path}, line {reader.line_num}", r) for r in reader]
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path}: not a CSV text file ({_first(exc)})") from None


def check_header(path: str, names, fields: tuple, optional: tuple = ()) -> None:
    """The columns of ``path``: every one of ``fields``, others only from ``optional``."""
    if not names:
        raise ConfigError(f"{path} is empty (expected a header line: {','.join(fields)})")
    names = list(names)
    missing = [f for f in fields if f not in names]
    unknown = [f for f in names if f not in fields + optional]
    twice = sorted({f for f in names if names.count(f) > 1})
    problems = [f"missing column(s) {', '.join(missing)}" if missing else "",
                f"unknown column(s) {', '.join(map(str, unknown))}" if unknown else "",
                f"column(s) {', '.join(twice)} given twice" if twice else ""]
    if any(problems):
        raise ConfigError(f"{path}: {'; '.join(p for p in problems if p)} "
                          f"(expected {','.join(fields)})")


def _record(where: str, row: dict) -> OpRecord:
    check_cells(where, row, FIELDS + OPTIONAL, ("device_name", "device_kind", "op", "dtype"))
    numbers = {f: number(where, f, row[f]) for f in FLOATS}
    numbers |= {f: number(where, f, row[f]) for f in REFS if f in row}
    # a database integer holds 2^63-1: a 30-digit count was an OverflowError of sqlite3
    try:
        samples = parse_number(row["samples"], "samples", lo=0, hi=MAX_INT64, integer=True)
    except ConfigError:
        raise ConfigError(f"{where}: samples must be an integer >= 0, got "
                          f"{str(row['samples'])[:40]!r} (and at most 2^63-1)") from None
    flags = {}
    for f in FLAGS:
        if row.get(f) is not None and str(row[f]) not in ("0", "1"):
            raise ConfigError(f"{where}: {f} must be 0 or 1, got {str(row[f])[:40]!r}")
        flags[f] = str(row.get(f)) == "1"
    device = row_device(row)
    op = str(row["op"])
    return OpRecord(device=device, op=op, params=complete(op, _params(where, row["params"])),
                    dtype=str(row["dtype"]), samples=samples, **numbers, **flags)


def check_cells(where: str, row: dict, fields: tuple, named: tuple) -> None:
    """A row as its header has it: no cell beyond, none missing, ``named`` not blank."""
    if None in row:  # csv.DictReader's key for fields beyond the header
        header = len(row) - 1
        raise ConfigError(f"{where}: {header + len(row[None])} fields, the header has {header}")
    absent = [f for f in fields if f in row and row[f] is None]
    if absent:
        raise ConfigError(f"{where}: field {absent[0]} is missing")
    for f in named:
        if not str(row[f]).strip():
            raise ConfigError(f"{where}: {f} is empty")


def row_device(row: dict) -> Device:
    return Device(*(str(row[f]) for f in DEVICE_FIELDS))


def _params(where: str, text) -> dict:
    try:
        params = json.loads(text, parse_constant=_no_constant)
    except RecursionError:  # a cell nested 20,000 deep
        raise ConfigError(f"{where}: params is not JSON (nested too deeply)") from None
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: params is not JSON: {str(text)[:60]!r}") from None
    if not isinstance(params, dict) or not all(
            isinstance(v, str) or _param_number(v) for v in params.values()):
        raise ConfigError(f"{where}: params must be a JSON object of numbers (at most "
                          f"{MAX_PARAM:.0e} in size) and strings, got {str(text)[:60]!r}")
    return params


def _param_number(value) -> bool:
    """A finite number in [-MAX_PARAM, MAX_PARAM]: a 400-digit size would overflow float()."""
    try:
        parse_number(value, "a parameter", lo=-MAX_PARAM, hi=MAX_PARAM)
    except ConfigError:
        return False
    return True


def _no_constant(name: str):
    raise ValueError(f"{name} is not a parameter value")


def number(where: str, field: str, text) -> float:
    """A time, spread or date: ASCII digits, finite, from 0 to MAX_NUMBER."""
    if not _float_literal(text):
        raise ConfigError(f"{where}: {field} must be a number, got {str(text)[:40]!r}")
    try:
        return parse_number(text, field, lo=0, hi=MAX_NUMBER)
    except ConfigError:
        raise ConfigError(f"{where}: {field} must be a finite number >= 0, got "
                          f"{str(text)[:40]!r} (and at most {MAX_NUMBER:g})") from None


def _float_literal(text) -> bool:
    """Whether ``text`` reads as a number at all ('nan' and '1e999' do, '١٢' and 'soon' not)."""
    if isinstance(text, str):
        try:
            float(text)
        except ValueError:
            return False
        return text.isascii() and "_" not in text
    return isinstance(text, (int, float)) and not isinstance(text, bool)


def _first(exc) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__


def pyarrow_modules():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("Parquet needs pyarrow: pip install pyarrow (or use a .csv file)") \
            from None
    return pa, pq
