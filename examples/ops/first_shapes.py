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

import os
import sys

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError
from sgdsim.ops.exchange import export_records, import_records
from sgdsim.units import parse_number


def cut(records: list, types: set[str], n: int) -> list:
    """``records`` with each of ``types`` kept to its n earliest measured (per device and
    dtype); other types as they are."""
    groups: dict[tuple[str, str, str], list] = {}
    for r in records:
        groups.setdefault((r.device.name, r.op, r.dtype), []).append(r)
    out = []
    for (_, op, _), rs in groups.items():
        out += sorted(rs, key=lambda r: r.measured_at)[:n] if op in types else rs
    return out


def main() -> None:
    src, dst, names, n_text = sys.argv[1:5]
    n = parse_number(n_text, "N (rows a type keeps)", lo=1, hi=10 ** 6, integer=True)
    if os.path.exists(dst):
        raise ConfigError(f"{dst} exists; refusing to overwrite it")
    try:
        records = import_records(src)  # every row checked, as `sgdsim ops import` checks it
    except ConfigError as exc:
        if not os.path.isfile(src):
            raise
        raise ConfigError(f"not an operator export (sgdsim ops export): {exc}") from None
    types = set(names.split(","))
    unknown = types - {r.op for r in records}
    if unknown:
        raise ConfigError(f"{src} has no rows of {', '.join(sorted(unknown))}")
    kept = export_records(cut(records, types, n), dst)
    print(f"wrote {kept} of {len(records)} rows to {dst}")


if __name__ == "__main__":
    run_main(main, "EXPORT.csv OUT.csv TYPES N  (TYPES: a comma list)", 4)
