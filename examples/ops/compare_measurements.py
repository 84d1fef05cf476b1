"""Two measurements of the same calls, compared: per direction and size band, how far apart.

    sgdsim ops export a.csv --db a.sqlite && sgdsim ops export b.csv --db b.sqlite
    python examples/ops/compare_measurements.py a.csv b.csv

For each direction (forward, backward) and band of the first file's time, over the calls both
timed (neither an upper bound): the median and mean of |t_b / t_a - 1| (how far apart two
measurements are) and the geometric mean of t_b / t_a with its standard error (whether one is
systematically above the other). Two runs of the same timer give the machine's test-retest.
"""
from __future__ import annotations

import math
import statistics
import sys

from sgdsim.errors import ConfigError
from sgdsim.ops.exchange import import_records

BANDS = (("all", 0.0, math.inf), ("< 2.5 ms", 0.0, 2.5e-3), (">= 5 ms", 5e-3, math.inf))


def load(path: str) -> dict:
    return {r.key: r for r in import_records(path)}


def ratios(a: dict, b: dict, direction: str, low: float, high: float) -> list[float]:
    out = []
    for key, ra in a.items():
        rb = b.get(key)
        if rb is None or getattr(ra, f"{direction}_bound") or getattr(rb, f"{direction}_bound"):
            continue
        ta, tb = getattr(ra, f"{direction}_s"), getattr(rb, f"{direction}_s")
        if ta > 0 and tb > 0 and low <= ta < high:
            out.append(tb / ta)
    return out


def row(direction: str, band: str, r: list[float]) -> str:
    logs = [math.log(x) for x in r]
    sd = statistics.stdev(logs) if len(logs) > 1 else 0.0
    dev = [abs(x - 1) for x in r]
    return (f"| {direction} | {band} | {len(r)} | {100 * statistics.median(dev):.1f} % "
            f"| {100 * statistics.fmean(dev):.1f} % "
            f"| {math.exp(statistics.fmean(logs)):.3f} ± {math.exp(sd / math.sqrt(len(r))) - 1:.3f} |")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compare_measurements.py A.csv B.csv (sgdsim ops export files)", file=sys.stderr)
        return 2
    try:
        a, b = load(argv[0]), load(argv[1])
    except ConfigError as e:
        print(f"compare_measurements.py: cannot read the exports: {e}", file=sys.stderr)
        return 2
    print("| direction | band (first file) | calls | median \\|b/a-1\\| | mean | geo-mean b/a ± s.e. |")
    print("|---|---|---:|---:|---:|---|")
    for direction in ("fwd", "bwd"):
        for band, low, high in BANDS:
            r = ratios(a, b, direction, low, high)
            if r:
                print(row(direction, band, r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
