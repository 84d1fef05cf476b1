"""``sgdsim ops list | stats | export | import``: look into and share an operator database."""
from __future__ import annotations

import datetime
import json

from ..errors import ConfigError


def add_db_argument(parser) -> None:
    from .db import default_db_path

    shown = default_db_path().replace("%", "%%")  # argparse %-formats help texts
    parser.add_argument("--db", default=None, metavar="PATH|URL",
                        help=f"SQLite file or postgresql+psycopg://USER@HOST/DB "
                             f"(default: $SGDSIM_OPS_DB or {shown})")


def _filters(q, what: str) -> None:
    q.add_argument("--device", default=None, help=f"{what} this device name only (default: every device)")
    q.add_argument("--op", default=None, help=f"{what} this operator type only, e.g. conv2d or mm (default: every type)")
    q.add_argument("--dtype", default=None, help=f"{what} this dtype only, e.g. float32 (default: every dtype)")


def register(sub) -> dict:
    q = sub.add_parser("list", help="the measured operators, one per line",
                       description="List measured operators (the filters combine).")
    _filters(q, "list")
    q.add_argument("--limit", type=int, default=50, help="at most this many rows (0: all)")
    add_db_argument(q)
    q = sub.add_parser("stats", help="rows per device, operator type and dtype",
                       description="Per device, operator type and dtype: how many shapes are "
                                   "measured, their median forward time, the trained "
                                   "estimator's median forward error on rows it was not fitted "
                                   "to, the test-retest (the median |again/stored - 1| of "
                                   "sgdsim ops retest; '-' before one ran), the one over the "
                                   "other, and when they were last measured; then the model "
                                   "steps timed whole (ops measure --model) against their "
                                   "calls' sum.")
    add_db_argument(q)
    q = sub.add_parser("export", help="write the measurements to CSV or Parquet",
                       description="Write measurements to FILE (.csv, or .parquet with pyarrow) "
                                   "for someone else's 'sgdsim ops import'.")
    q.add_argument("file", help="FILE.csv or FILE.parquet")
    _filters(q, "export")
    q.add_argument("--steps", action="store_true",
                   help="write the model steps timed whole (ops measure --model), which a "
                        "device's step factor rests on, instead of the calls")
    q.add_argument("--force", action="store_true", help="overwrite an existing FILE")
    add_db_argument(q)
    q = sub.add_parser("import", help="add measurements from a CSV or Parquet file",
                       description="Add or update measurements from FILE: a row already in the "
                                   "database (same device, operator, parameters, dtype) is "
                                   "updated, never duplicated. Every row is checked first; "
                                   "a bad file writes nothing. A file of timed steps (ops "
                                   "export --steps) is known by its header.")
    q.add_argument("file", help="FILE.csv or FILE.parquet (from sgdsim ops export)")
    add_db_argument(q)
    return {"list": cmd_list, "stats": cmd_stats, "export": cmd_export, "import": cmd_import}


def cmd_list(args) -> int:
    from .db import open_db

    if args.limit < 0:
        raise ConfigError(f"--limit must be >= 0 (0: all), got {args.limit}")
    with open_db(args.db, create=False) as db:
        rows = db.load(args.device, args.op, args.dtype)
    if not rows:
        print("no measurements match" if (args.device or args.op or args.dtype)
              else "no measurements yet (sgdsim ops measure)")
        return 0
    shown = rows if args.limit == 0 else rows[:args.limit]
    print(f"{'device':<24} {'op':<12} {'dtype':<9} {'fwd µs':>10} {'bwd µs':>10} {'±fwd':>6}  "
          f"params")
    for r in shown:
        print(f"{_cut(r.device.name, 24):<24} {r.op:<12} {r.dtype:<9} {r.fwd_s * 1e6:>10.1f} "
              f"{r.bwd_s * 1e6:>10.1f} {r.fwd_spread:>6.1%}  {_cut(_params(r.params), 80)}")
    if len(shown) < len(rows):
        print(f"... {len(rows) - len(shown)} more (--limit 0 shows all)")
    return 0


def cmd_stats(args) -> int:
    from .db import open_db
    from .stats_hint import RATIO_BAR, next_steps

    with open_db(args.db, create=False) as db:
        stats = db.stats()
        held_out = {(d.name, op, dt): _held_out(text) for d in db.devices()
                    for (op, dt), text in db.load_estimators(d.name).items()}
        retests = db.load_retests()
        steps = db.load_steps()
    if not stats:  # a database may hold steps alone (ops import of a steps file)
        print("no measurements yet (sgdsim ops measure)")
        _print_steps(steps)
        return 0
    print(f"{'device':<40} {'op':<12} {'dtype':<9} {'rows':>6} {'median fwd µs':>14} "
          f"{'estimator':>9} {'retest':>7} {'ratio':>6}  last measured")
    ratios, flagged = 0, []
    for s in stats:
        key = (s["device"], s["op"], s["dtype"])
        err, again = held_out.get(key, "-"), retests.get(key, {}).get("fwd_median")
        over = err / again if isinstance(err, float) and again else None
        ratio = "-" if over is None else f"{over:.2f}x"
        ratios += over is not None
        if over is not None and over > RATIO_BAR:
            flagged.append({**s, "retest_rows": retests[key].get("rows")})
        est = f"{err:.1%}" if isinstance(err, float) else err
        print(f"{_cut(s['device'], 40):<40} {s['op']:<12} {s['dtype']:<9} {s['rows']:>6} "
              f"{s['median_fwd_s'] * 1e6:>14.1f} {est:>9} {_pct(again):>7} {ratio:>6}  "
              f"{_when(s['last_measured_at'])}")
    if ratios:
        print("estimator: its median forward error on rows it was not fitted to; ratio: that over "
              f"the retest: at most {RATIO_BAR}x, as good as this machine's repeatability lets one show "
              "(docs/ops.md §5)")
        for line in next_steps(flagged, args.db, len({s["device"] for s in stats}) > 1):
            print(line)
    _print_steps(steps)
    return 0


def _print_steps(steps: list[dict]) -> None:
    """What a whole step costs beyond its calls (the step factor estimates are scaled by), by
    precision: float32's steps and autocast's give factors of their own (step_factor.py)."""
    if not steps:
        return
    print(f"\n{'device':<40} {'model step timed':<36} {'batch':>5} {'precision':<18} {'step ms':>9} "
          f"{'calls ms':>9} {'ratio':>6}  measured")
    for r in steps:
        print(f"{_cut(r['device'], 40):<40} {_cut(r['model'], 36):<36} {r['batch_size']:>5} "
              f"{r['dtype']:<18} {r['step_s'] * 1e3:>9.2f} {r['calls_s'] * 1e3:>9.2f} "
              f"{r['step_s'] / r['calls_s']:>6.3f}  {_when(r['measured_at'])}")


def cmd_export(args) -> int:
    from ..outputs import check_output_path
    from ..progress import say
    from .db import open_db
    from .exchange import export_records, pyarrow_modules

    if args.steps and args.op:
        raise ConfigError("--op selects calls; --steps writes whole model steps (drop one)")
    check_output_path(args.file, args.force)
    if args.file.endswith(".parquet"):
        pyarrow_modules()  # refused before reading the database, not after
    if args.steps:
        return _export_steps(args)
    with open_db(args.db, create=False) as db:
        records = db.load(args.device, args.op, args.dtype, raw=True)  # as stored, references beside
        steps = [] if args.op else db.load_steps(args.device, args.dtype)
    if not records:
        raise ConfigError("no measurements match; nothing to export" if
                          (args.device or args.op or args.dtype) else "the database is empty")
    n = export_records(records, args.file)
    say(f"wrote {n} row(s) to {args.file}")
    if steps:  # another table: said, so that sharing the calls does not drop them unseen
        say(f"not in it: {len(steps)} model step(s) timed whole, which the step factor rests "
            f"on (sgdsim ops export FILE --steps writes them)")
    return 0


def _export_steps(args) -> int:
    from ..progress import say
    from .db import open_db
    from .exchange_steps import export_steps

    with open_db(args.db, create=False) as db:
        steps = db.load_steps(args.device, args.dtype)
        devices = {d.name: d for d in db.devices()}
    if not steps:
        raise ConfigError("no timed steps match; nothing to export" if (args.device or args.dtype)
                          else "no model step timed in the database (sgdsim ops measure --model)")
    n = export_steps(steps, devices, args.file)
    say(f"wrote {n} timed step(s) to {args.file}")
    return 0


def cmd_import(args) -> int:
    from .db import open_db
    from .db_keyed import STEP_KEY
    from .exchange import read_rows, records_of
    from .exchange_steps import is_steps_file, steps_of

    names, rows = read_rows(args.file)
    if is_steps_file(names):
        steps = steps_of(args.file, names, rows)  # every row checked before anything is written
        with open_db(args.db) as db:
            before = {(s["device"], *(s[k] for k in STEP_KEY)) for s in db.load_steps()}
            written = db.upsert_steps(steps)
        keys = {(s["device"].name, *(s[k] for k in STEP_KEY)) for s in steps}
        print(f"imported {written} timed step(s) ({len(keys - before)} new, {len(keys & before)} updated)")
        return 0
    records = records_of(args.file, names, rows)  # every row checked before anything is written
    keys = {r.key for r in records}
    with open_db(args.db) as db:
        before = set()
        for device in {k[0] for k in keys}:
            found = db.lookup(device, [k[1:] for k in keys if k[0] == device])
            before |= {(device, *k) for k in found}
        written = db.upsert(records)
    print(f"imported {written} rows ({len(keys - before)} new, {len(keys & before)} updated)")
    return 0


def _held_out(payload: str) -> float | str:
    """A stored estimator's held-out forward median; "yes" where it has none (trained before
    the figure), "corrupt" where its payload is not JSON. A listing reports what is stored and
    never stops on it: ``profile --estimate`` is what refuses an estimator it cannot read."""
    try:
        value = json.loads(payload).get("stats", {}).get("held_out_fwd_median")
    except (ValueError, AttributeError):
        return "corrupt"
    return float(value) if isinstance(value, (int, float)) else "yes"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _when(unix_s: float) -> str:
    if unix_s <= 0:
        return "-"  # recorded without a time
    return datetime.datetime.fromtimestamp(unix_s).strftime("%Y-%m-%d %H:%M")
