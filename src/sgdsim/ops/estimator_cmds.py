"""``sgdsim ops train`` and ``sgdsim ops eval``: the estimator per operator type (Tianshu §3.2)."""
from __future__ import annotations

from collections import defaultdict

from ..errors import ConfigError

MIN_ROWS = 10
# 3 is steadier on shapes beyond the grid but trains about twice as long for one --budget
# (docs/ops.md, §3 "Several trainings, one estimator"): asked for, not the default
MEMBERS = 1


def register(sub) -> dict:
    from .db_cmds import add_db_argument

    for name, text in (("train", "train the estimator of each operator type and store it"),
                       ("eval", "held-out error with and without the principal component "
                                "(Tianshu Table 3)")):
        q = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        q.add_argument("--device", default=None,
                       help="device name in the database (default: its only device)")
        q.add_argument("--op", default="all", help="comma list of operator types, or all")
        q.add_argument("--budget", type=float, default=30.0,
                       help="seconds of search and training per operator type")
        q.add_argument("--seed", type=int, default=0, help="seed of splits and initial weights")
        if name == "train":
            q.add_argument("--members", type=int, default=MEMBERS,
                           help="estimators trained per type, a share of the budget each, their "
                                "median kept; 3 is steadier on shapes beyond the grid and "
                                f"takes about twice as long (default {MEMBERS})")
            q.add_argument("--no-pc", action="store_true",
                           help="train without the principal component (for comparison)")
            q.add_argument("--prior", default="auto", choices=("auto", "on", "off"),
                           help="on: the MLP corrects a prior fitted to each type's rows (its "
                                "physical terms, else a roofline) instead of learning the time; off: "
                                "the MLP alone; auto: a type with physical terms gets them alone, "
                                "in under a second, any other both on and off, half the budget "
                                "each, the one with the lower validation error (default auto)")
        else:
            q.add_argument("--holdout", type=float, default=0.1,
                           help="fraction of each type's rows held out for the error")
            q.add_argument("--markdown", default=None, metavar="FILE",
                           help="also write the table as markdown; refuses an existing FILE (default: terminal only)")
            q.add_argument("--force", action="store_true", help="overwrite an existing --markdown FILE")
        add_db_argument(q)
    return {"train": cmd_train, "eval": cmd_eval}


def _groups(db, args):
    from .estimate import pick_target
    from .estimator.ensemble import MAX_MEMBERS
    from .optypes import REGISTRY, wanted_types

    if not 1 <= args.budget <= 3600:
        raise ConfigError(f"--budget must be in 1..3600 seconds, got {args.budget}")
    if not 0 <= args.seed < 2 ** 63:
        raise ConfigError(f"--seed must be in 0..2^63-1, got {args.seed}")
    if not 1 <= getattr(args, "members", 1) <= MAX_MEMBERS:
        raise ConfigError(f"--members must be in 1..{MAX_MEMBERS}, got {args.members}")
    device = pick_target(db, args.device, None)
    wanted = wanted_types(args.op)
    groups = defaultdict(list)
    for r in db.load(device=device):
        if wanted is None or r.op in wanted:
            groups[(r.op, r.dtype)].append(r)
    small = sorted(f"{op} ({len(rs)})" for (op, _), rs in groups.items() if len(rs) < MIN_ROWS)
    small += sorted(f"{op} (0)" for op in (wanted or set()) - {op for op, _ in groups})
    dtypes = sorted({dt for _, dt in groups}) or ["float32"]  # the precisions measured: more of them
    groups = {k: v for k, v in sorted(groups.items()) if len(v) >= MIN_ROWS}
    if not groups:
        from .stats_hint import grid_commands

        few = f": rows a type {', '.join(small)}" if small else ""
        runs = grid_commands({dt: [args.op] for dt in dtypes}, args.db)
        raise ConfigError(f"nothing to train on {device!r}{few}; every operator type needs "
                          f">= {MIN_ROWS} measurements ({runs})")
    return device, groups, REGISTRY, small


def _plan_line(types: int, searched: int, device: str, budget_s: float) -> str:
    """What training will take: a type with physical terms is fitted in under a second, a
    searched one for its budget (the clock stops it at OVERRUN x budget)."""
    from ..units import format_duration_s
    from .estimator.search import OVERRUN

    head = f"training {types} estimator(s) on {device}: "
    if not searched:
        return head + "each fitted from its physical terms, in under a second"
    planned = searched * budget_s
    return (head + f"{types - searched} fitted from their physical terms, {searched} searched for "
            f"{budget_s:g} s each as planned (up to {OVERRUN * budget_s:g} s on a machine slower than "
            f"the plan's): {format_duration_s(planned)} to {format_duration_s(OVERRUN * planned)} in all")


def cmd_train(args) -> int:
    from ..progress import Progress, say
    from .db import open_db
    from .estimator.ensemble import train_members
    from .estimator.model import fitted_alone
    from .optypes import type_rng

    failed: list[str] = []
    vague: list[tuple[str, str]] = []  # failed (type, dtype)s whose message does not say what to run
    set_aside: list[str] = []
    with open_db(args.db, create=False) as db:
        device, groups, registry, small = _groups(db, args)
        if small:
            say(f"skipped (fewer than {MIN_ROWS} rows): {', '.join(small)}")
        # each search is planned for its budget by a cost model, and the clock stops it at
        # OVERRUN x budget (the plan is machine-independent, so a slower machine overruns it)
        # with --prior auto a type with physical terms is fitted, not searched: under a second
        searched = [op for op, _ in groups if not fitted_alone(op, args.prior)]
        say(_plan_line(len(groups), len(searched), device, args.budget))
        print(f"{'op':<12} {'dtype':<9} {'rows':>5} {'model':>7} {'val error':>9} {'fwd median':>10} "
              f"{'s':>5}  principal component")
        with Progress(len(groups), f"training {len(groups)} estimator(s)") as bar:
            for (op, dtype), rows in groups.items():
                try:  # one type's bad data never stops the others
                    _check_params(op, rows, registry[op])
                    est = train_members(rows, registry[op].shape_dims, type_rng(args.seed, f"{op}/{dtype}"),
                                        args.budget, args.members, use_pc=not args.no_pc,
                                        use_prior={"auto": "auto", "on": True, "off": False}[args.prior])
                except ConfigError as exc:
                    failed.append(f"{op}/{dtype} ({exc})")
                    if not isinstance(exc, MissingParams):
                        vague.append((op, dtype))
                    print(f"{op:<12} {dtype:<9} {len(rows):>5}  not trained: {exc}", flush=True)
                    bar.advance()
                    continue
                db.save_estimator(device, op, dtype, est.to_json())
                s = est.stats
                if s["set_aside"]:
                    set_aside.append(f"{op}/{dtype} {s['set_aside']}")
                print(_trained_line(op, dtype, len(rows), s), flush=True)
                bar.advance()
    _summary(device, len(groups) - len(failed), (failed, vague), set_aside, args.db)
    return 0


class MissingParams(ConfigError):
    """Rows lack a parameter their type reads; the message says what to measure."""


def _trained_line(op: str, dtype: str, rows: int, s: dict) -> str:
    """One row of the training table: the validation error training minimised (the mean over
    both directions) and the held-out forward median ``ops stats`` reads against the retest."""
    median = s.get("held_out_fwd_median")
    return (f"{op:<12} {dtype:<9} {rows:>5} {s['arch']:>7} {s['validation_error']:>9.2%} "
            f"{'-' if median is None else f'{median:.2%}':>10} {s['train_s']:>5.0f}  {s['pc']}")


def _check_params(op: str, rows, optype) -> None:
    """Rows written by hand or by another tool may lack a parameter the type reads."""
    required = optype.required()
    lacks = sorted({k for r in rows for k in required - set(r.params)})
    if lacks:
        raise MissingParams(f"{op} rows lack {', '.join(lacks)}, which the type reads: measure "
                            f"them with sgdsim ops measure --grid {op}")


def _summary(device: str, trained: int, failures: tuple[list[str], list[str]], set_aside: list[str],
             db: str | None) -> None:
    """``failures``: every failed type's line, and the types whose line does not say what to run."""
    from ..progress import say
    from .stats_hint import grid_commands

    failed, vague = failures
    if set_aside:
        say(f"rows set aside (a time below the timer's resolution, stored as a bound): {', '.join(set_aside)}")
    if failed:
        by_dtype: dict[str, list[str]] = {}
        for op, dtype in vague:
            by_dtype.setdefault(dtype, []).append(op)
        runs = grid_commands(by_dtype, db)
        names = ", ".join(dict.fromkeys(op for op, _ in vague))
        hint = f" Measure more of {names} ({runs}), then train again." if vague else ""
        say(f"not trained: {'; '.join(failed)}.{hint} Until then an estimate falls back to a "
            f"roofline for each")
    if not trained:
        raise ConfigError(f"no estimator trained for {device}: every operator type failed (see above)")
    say(f"stored {trained} estimator(s) for {device}")


def cmd_eval(args) -> int:
    from ..outputs import check_output_path
    from ..progress import Progress
    from .db import open_db
    from .estimator.report import render, table3_row

    if not 0.01 <= args.holdout <= 0.5:
        raise ConfigError(f"--holdout must be in 0.01..0.5, got {args.holdout}")
    if args.markdown:
        check_output_path(args.markdown, args.force)
    with open_db(args.db, create=False) as db:
        device, groups, registry, _ = _groups(db, args)
        retests = {(op, dt): v for (dev, op, dt), v in db.load_retests().items() if dev == device}
    rows = []
    with Progress(len(groups), f"evaluating {len(groups)} operator type(s)") as bar:
        for (op, _), recs in groups.items():
            rows.append(table3_row(recs, registry[op].shape_dims, args.seed, args.budget,
                                   args.holdout))
            bar.advance()
    text = f"Device: {device}\n\n" + render(rows, retests)
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0
