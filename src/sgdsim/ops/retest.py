"""``sgdsim ops retest``: how well this machine repeats its own measurements, per operator type.

A sample of each type's stored rows is timed again, the same way ``ops measure`` timed them,
and compared: |again / stored − 1|, its median and 90th percentile, stored per type. That is
the noise floor an estimator's held-out error is judged against (``ops eval``): an error
within 1.5× the test-retest noise is as good as the data allow. Where both timings have the
type's reference (``reference.py``), each is taken relative to it, as the database reads it
back; the printed "as timed" column is the same comparison without.
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import ConfigError


def register(sub) -> dict:
    from .db_cmds import add_db_argument

    q = sub.add_parser("retest", help="time a sample of each type's rows again: the noise floor",
                       description="Time a sample of each operator type's stored rows again on "
                                   "this machine and store, per type, how far the two agree.")
    q.add_argument("--samples", type=int, default=10, help="rows per operator type (default 10)")
    q.add_argument("--op", default="all", help="comma list of operator types, or all (default all)")
    q.add_argument("--seed", type=int, default=0, help="seed of the sample and the input data (default 0)")
    q.add_argument("--threads", type=int, default=1, help="torch intra-op threads, as measured (default 1)")
    q.add_argument("--rows", metavar="FILE.csv", default=None,
                   help="also write every row's two times (stored, again) to this CSV file; refuses an "
                        "existing one (default: none)")
    q.add_argument("--force", action="store_true", help="overwrite an existing --rows FILE")
    add_db_argument(q)
    return {"retest": cmd_retest}


def agreement(stored: list[float], again: list[float]) -> tuple[float, float]:
    """(median, 90th percentile) of |again / stored − 1| over the pairs with a stored time."""
    err = differences(stored, again)
    if not err.size:
        return 0.0, 0.0
    return float(np.median(err)), float(np.percentile(err, 90))


def differences(stored, again) -> np.ndarray:
    """|again / stored − 1| of each pair with a stored time: what the retest's medians are of."""
    return np.array([abs(a / s - 1) for s, a in zip(stored, again) if s > 0], dtype=float)


def cmd_retest(args) -> int:
    from ..progress import Progress, say
    from .timing_env import timing_settings, torch_module
    from .collect import measure_calls, this_device
    from .db import open_db
    from .records import learnable
    from .measure import DEFAULT_PRECISION, DEFAULT_REPEATS
    from .optypes import REGISTRY, wanted_types

    if not 2 <= args.samples <= 10000:
        raise ConfigError(f"--samples must be in 2..10000, got {args.samples}")
    wanted = wanted_types(args.op)  # checked before the database and the clock
    if args.rows is not None:
        from ..outputs import check_output_path
        check_output_path(args.rows, args.force)
    torch = torch_module()
    device = this_device(args.threads)
    rng = np.random.default_rng(args.seed)
    with open_db(args.db, create=False) as db, timing_settings(torch, args.threads):
        groups = _groups(learnable(db.load(device=device.name, raw=True))[0], wanted, device.name, args)
        picked = {k: [v[i] for i in sorted(rng.choice(len(v), min(args.samples, len(v)), replace=False))]
                  for k, v in sorted(groups.items())}
        todo = [(r.op, r.params, REGISTRY[r.op].build(r.params, r.dtype)) for rs in picked.values() for r in rs]
        with Progress(len(todo), "timing again") as bar:
            again = {}
            for rec in measure_calls(todo, device, rng, DEFAULT_REPEATS, precision=DEFAULT_PRECISION):
                again[rec.key] = rec
                bar.advance()
        print(f"{'op':<12} {'dtype':<9} {'rows':>5} {'fwd median':>10} {'fwd p90':>8} {'bwd median':>10} "
              f"{'as timed':>9}")
        for (op, dtype), rs in picked.items():
            values = _values(rs, again)
            db.save_retest(device.name, op, dtype, values)
            timed = _values(rs, again, relative=False)["fwd_median"]
            print(f"{op:<12} {dtype:<9} {values['rows']:>5} {values['fwd_median']:>10.1%} "
                  f"{values['fwd_p90']:>8.1%} {values['bwd_median']:>10.1%} {timed:>9.1%}")
        if args.rows is not None:
            write_pairs(args.rows, [r for rs in picked.values() for r in rs], again)
    say(f"stored the test-retest of {len(picked)} operator type(s) for {device.name} (sgdsim ops stats shows it)")
    return 0


def _groups(rows: list, wanted, device: str, args) -> dict[tuple[str, str], list]:
    """The rows to sample from, per (type, dtype): those of ``wanted`` (None: every sampled
    type); none is refused with what to measure."""
    from .optypes import OTHER_NAME, REGISTRY

    if not rows:
        raise ConfigError(f"nothing measured on this machine ({device}) in the database: a retest "
                          "runs where the rows were measured (sgdsim ops measure first)")
    groups: dict[tuple[str, str], list] = {}
    for r in rows:
        if r.op in REGISTRY and (wanted is None or r.op in wanted) and r.op != OTHER_NAME:
            groups.setdefault((r.op, r.dtype), []).append(r)
    if not groups:
        from .stats_hint import db_flag

        held = ", ".join(sorted({r.op for r in rows}))
        raise ConfigError(f"--op {args.op}: no rows of it on this machine ({device}) in the "
                          f"database, which holds {held}: measure them first (sgdsim ops measure "
                          f"--grid {args.op}{db_flag(args.db)})")
    return groups


PAIR_COLUMNS = ("op", "dtype", "params", "fwd_s", "fwd_again_s", "bwd_s", "bwd_again_s",
                "fwd_rel", "fwd_again_rel", "bwd_rel", "bwd_again_rel")


def write_pairs(path: str, stored: list, again: dict) -> None:
    """One line per row timed again: its stored and new times as timed (seconds; a bound
    row's backward empty) and both over their references, as the medians compare them."""
    import csv
    import json

    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(PAIR_COLUMNS)
        for r, a in _matched(stored, again):
            bwd = _both_timed(r, a)
            out.writerow([r.op, r.dtype, json.dumps(r.params, sort_keys=True), r.fwd_s, a.fwd_s,
                          r.bwd_s if bwd else "", a.bwd_s if bwd else "",
                          *_pair(r, a, "fwd", True),
                          *(_pair(r, a, "bwd", True) if bwd else ("", ""))])


def _matched(stored: list, again: dict) -> list:
    """(stored row, its new timing) for each row timed again."""
    return [(r, again[r.key]) for r in stored if r.key in again]


def _both_timed(stored, again) -> bool:
    """Whether both backward times are measurements (neither stored as a bound)."""
    return not (stored.bwd_bound or again.bwd_bound)


def _values(stored: list, again: dict, relative: bool = True) -> dict:
    pairs = _matched(stored, again)
    fwd = agreement(*zip(*[_pair(r, a, "fwd", relative) for r, a in pairs])) if pairs else (0.0, 0.0)
    measured = [_pair(r, a, "bwd", relative) for r, a in pairs if _both_timed(r, a)]
    bwd = agreement(*zip(*measured)) if measured else (0.0, 0.0)
    return {"rows": len(pairs), "fwd_median": fwd[0], "fwd_p90": fwd[1], "bwd_median": bwd[0],
            "bwd_p90": bwd[1], "retested_at": time.time()}


def _pair(stored, again, direction: str, relative: bool) -> tuple[float, float]:
    """A direction's two times, each over its reference where both have one (and
    ``relative``): compared as the database reads them (times the type's mean reference,
    which cancels)."""
    t = [getattr(x, f"{direction}_s") for x in (stored, again)]
    ref = [getattr(x, f"{direction}_ref_s") for x in (stored, again)]
    if relative and min(ref) > 0:
        return t[0] / ref[0], t[1] / ref[1]
    return t[0], t[1]
