"""Matrix products whose outputs are 4,097-8,191 columns wide, the widths no grid draws
(docs/ops-runs.md, run 56). addmm and mm are drawn as their samplers draw a vocabulary-sized
product (rows 1-4,096, an inner dimension of 64-2,048, the sampler's own flags) but for the
width: half of the shapes inside that gap, a quarter each side of it (2,048-4,096 and
8,192-16,384). Each is timed as `sgdsim ops measure` times a grid (differential, to 5 %, the
type's reference call beside its rows) into a new database, which `ops retest` and the
estimator's scripts then read like any grid.

    python examples/ops/gap_widths.py OUT.sqlite [--shapes 60] [--seed 69]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from run_main import run_main  # beside this script
from sgdsim.errors import ConfigError

TYPES = ("addmm", "mm")
BANDS = ((2048, 4096), (4097, 8191), (8192, 16384))
BAND_SHARES = (0.25, 0.5, 0.25)
MAX_MACS = 2e9  # ~50 ms a forward on one core: the whole run stays within minutes


def gap_calls(shapes: int, seed: int) -> list:
    """``shapes`` distinct (type, params, call) a type; each type from its own stream."""
    from sgdsim.ops.optypes import optype, type_rng
    from sgdsim.ops.optypes.base import aligned_int, capped
    from sgdsim.ops.records import params_key

    def draw(rng):
        lo, hi = BANDS[rng.choice(len(BANDS), p=BAND_SHARES)]
        return {"m": aligned_int(rng, 1, 4096, 8), "k": aligned_int(rng, 64, 2048),
                "n": aligned_int(rng, lo, hi)}

    out = []
    for name in TYPES:
        t, rng, seen = optype(name), type_rng(seed, name), set()
        while len(seen) < shapes:
            p = {**t.sample(rng), **capped(rng, draw, lambda q: q["m"] * q["k"] * q["n"], MAX_MACS)}
            if params_key(p) not in seen:
                seen.add(params_key(p))
                out.append((name, p, t.build(p, "float32")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="products 4,097-8,191 columns wide, timed into a database")
    ap.add_argument("out")
    ap.add_argument("--shapes", type=int, default=60, help="shapes a type (default 60)")
    ap.add_argument("--seed", type=int, default=69)
    args = ap.parse_args()
    if not 1 <= args.shapes <= 1000:
        raise ConfigError(f"--shapes must be in 1..1000, got {args.shapes}")
    if os.path.exists(args.out):
        raise ConfigError(f"refusing to overwrite {args.out}: name a new database")
    _measure(gap_calls(args.shapes, args.seed), args.out, np.random.default_rng(args.seed))


def _measure(todo, path: str, rng) -> None:
    from sgdsim.ops.collect import measure_calls, this_device
    from sgdsim.ops.db import open_db
    from sgdsim.ops.measure import DEFAULT_PRECISION, DEFAULT_REPEATS
    from sgdsim.ops.timing_env import timing_settings, torch_module
    from sgdsim.progress import Progress

    torch = torch_module()
    with open_db(path) as db, timing_settings(torch, 1), Progress(len(todo), "timing products") as bar:
        device = this_device(1)
        for rec in measure_calls(todo, device, rng, DEFAULT_REPEATS, precision=DEFAULT_PRECISION):
            db.upsert([rec])
            bar.advance()
    print(f"{len(todo)} products timed into {path} ({device.name})")


if __name__ == "__main__":
    run_main(main)
