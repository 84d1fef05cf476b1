"""A grid as an earlier, smaller rule drew it: each named type cut to its N earliest rows.

A grid draws a type's shapes from its own stream, so its first N shapes are those a grid of N
shapes of that type drew (``collect.grid_calls``); measured in that order, they are its N
earliest rows. Before 2026-12-06 every type drew ``--samples`` shapes; since, the types that
fit many rates draw more (docs/ops.md §1). Cutting them back to ``--samples`` gives the old
rule's grid from the same session's rows, to compare the two on the same calls
(docs/ops-runs.md, runs 38 and 39):

    sgdsim ops export g.csv --db g.sqlite
    python examples/ops/first_shapes.py g.csv g-first30.csv addmm,mm,bmm,conv2d,eltwise,sdpa 30
    sgdsim ops import g-first30.csv --db g-first30.sqlite
"""
from __future__ import annotations

import csv
import os
import sys

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.units import parse_number


def cut(rows: list[dict], types: set[str], n: int) -> list[dict]:
    """``rows`` (an export's dicts) with each of ``types`` kept to its n earliest measured
    (per dtype and device); other types as they are."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["device_name"], r["op"], r["dtype"]), []).append(r)
    out = []
    for (_, op, _), rs in groups.items():
        if op in types:
            rs = sorted(rs, key=lambda r: float(r["measured_at"]))[:n]
        out += rs
    return out


def main() -> None:
    src, dst, names, n_text = sys.argv[1:5]
    n = parse_number(n_text, "N (rows a type keeps)", lo=1, hi=10 ** 6, integer=True)
    if os.path.exists(dst):
        raise ConfigError(f"{dst} exists; refusing to overwrite it")
    try:
        with open(src, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows, fields = list(reader), reader.fieldnames or []
    except OSError as exc:
        raise ConfigError(f"cannot read {src}: {exc.strerror}") from None
    missing = {"device_name", "op", "dtype", "measured_at"} - set(fields)
    if missing:
        raise ConfigError(f"{src} is not an operator export (sgdsim ops export): no {', '.join(sorted(missing))} column")
    types = set(names.split(","))
    unknown = types - {r["op"] for r in rows}
    if unknown:
        raise ConfigError(f"{src} has no rows of {', '.join(sorted(unknown))}")
    kept = cut(rows, types, n)
    with open(dst, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    print(f"wrote {len(kept)} of {len(rows)} rows to {dst}")


if __name__ == "__main__":
    run_main(main, "EXPORT.csv OUT.csv TYPES N  (TYPES: a comma list)", 4)
