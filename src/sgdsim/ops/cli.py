"""``sgdsim ops``: measure operators, keep them in a database, train and evaluate the estimator.

``measure`` is here; the database commands are in ``db_cmds``, the estimator's in
``estimator_cmds``. Each sub-command module has ``register(ops_subparsers) -> {name: handler}``.
"""
from __future__ import annotations

from .measure import DEFAULT_PRECISION, DEFAULT_REPEATS
from .template import FLOATING
from .timing_env import timing_settings, torch_module as _torch

from ..cli.common import Parser
from ..errors import ConfigError
from ..profiler.precision import AUTOCAST, check_autocast

BATCH = 20  # records per transaction: a kill loses at most this many measurements


def register(subparsers):
    from . import db_cmds, estimator_cmds, retest

    p = subparsers.add_parser(
        "ops", help="operator database: measure, list, share, train the estimator",
        description="Measure operators ahead of time into a database (SQLite file or "
                    "PostgreSQL URL), share it, and train the estimator that times operator "
                    "shapes nobody measured (docs/ops.md).")
    sub = p.add_subparsers(dest="ops_command", required=True, parser_class=Parser)
    handlers = {"measure": cmd_measure}
    _measure_parser(sub)
    handlers.update(db_cmds.register(sub))
    handlers.update(estimator_cmds.register(sub))
    handlers.update(retest.register(sub))

    def dispatch(args) -> int:
        return handlers[args.ops_command](args)
    return {"ops": dispatch}


DTYPES = FLOATING[:3]  # float32, float16, bfloat16


def _measure_parser(sub) -> None:
    from .db_cmds import add_db_argument
    from .collect import MAX_SHAPE_FACTOR, RATES_PER_SAMPLE, SCALED_FROM
    from .optypes import SAMPLED

    q = sub.add_parser("measure", help="time operators on this machine into the database",
                       description="Differential timing (N and M copies, Tianshu §3.1) of a "
                                   "sampled grid of shapes, or of every distinct call of a "
                                   "model's training step.")
    what = q.add_mutually_exclusive_group(required=True)
    what.add_argument("--grid", metavar="TYPES",
                      help=f"comma list of operator types, or 'all' ({', '.join(SAMPLED)})")
    what.add_argument("--model", metavar="MODEL",
                      help="zoo:NAME[?k=v], FILE.py:FN or MODULE:FN: its step's calls")
    q.add_argument("--batch-size", type=int, default=None, help="batch size of the traced step; required with --model (default: none)")
    q.add_argument("--samples", type=int, default=100,
                   help=f"grid points per operator type; from {SCALED_FROM} on, a type whose "
                        f"estimator fits more than {RATES_PER_SAMPLE} rates gets rates/{RATES_PER_SAMPLE} "
                        f"times as many, up to {MAX_SHAPE_FACTOR}x (default 100)")
    q.add_argument("--seed", type=int, default=0, help="seed of the grid and the input data")
    q.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help="differential measurements per call, at least (median and spread)")
    q.add_argument("--precision", type=float, default=DEFAULT_PRECISION.rel,
                   help="repeat until the median's relative standard error is at most this "
                        f"(0: exactly --repeats; default {DEFAULT_PRECISION.rel})")
    q.add_argument("--max-repeats", type=int, default=DEFAULT_PRECISION.max_repeats,
                   help=f"stop there even if --precision is not reached (default {DEFAULT_PRECISION.max_repeats})")
    q.add_argument("--max-time", default=f"{DEFAULT_PRECISION.max_s:g}s", metavar="DURATION",
                   help="per call and direction: start no repeat beyond --repeats after this "
                        f"long, even if --precision is not reached (default {DEFAULT_PRECISION.max_s:g}s)")
    q.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    q.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    q.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="floating-point type of the timed tensors (default float32)")
    q.add_argument("--autocast", default=None, choices=AUTOCAST,
                   help="with --model: its calls as the step runs them under torch.autocast in "
                        "this type (mixed precision), its casts included (default: none)")
    q.add_argument("--remeasure", action="store_true",
                   help="time calls the database already has again (default: skip them)")
    q.add_argument("--no-reference", dest="reference", action="store_false",
                   help="do not time each type's reference call beside its rows (about half the "
                        "time; the rows are then read as timed, the machine's drift left in them)")
    q.add_argument("--no-step", dest="step", action="store_false",
                   help="with --model: do not time its step whole (by default it is, after its "
                        "calls, and stored: what a step costs beyond its calls, which "
                        "'profile --estimate --step-factor' scales by; under --autocast by default)")
    add_db_argument(q)


def cmd_measure(args) -> int:
    from ..cpu_load import CpuWatch, busy_line
    from ..progress import Progress, say, status
    from .collect import call_key
    from .db import open_db
    from .measure import Precision

    _check_measure(args)
    torch = _torch()
    rng = _rng(args.seed)
    # the database opened first: a bad --db fails before minutes of timing
    with open_db(args.db) as db, timing_settings(torch, args.threads):
        device, todo = _plan(args, status)
        skip = set() if args.remeasure else _known(db, device.name)
        todo = [t for t in todo if call_key(t) not in skip]
        say(f"measuring {len(todo)} call(s) on {device.name}"
            f"{f' ({len(skip)} already in the database)' if skip else ''}")
        failures: list[str] = []
        precision = Precision(args.precision or None, args.max_repeats, args.max_time_s)
        watch = CpuWatch().start()
        written = _run(db, todo, (device, rng, args.repeats, failures, precision, args.reference),
                       Progress(len(todo), "measuring"))
        say(f"wrote {written} record(s) to {args.db or 'the default database'}")
        if args.model and args.step:
            _time_step(args, db, device.name)
    busy = busy_line(watch.cores(), "they were timed")
    if busy:
        say(f"{busy} (sgdsim ops measure --remeasure times them again)")
    if failures:
        say(f"{len(failures)} call(s) could not be replayed and are not in the database "
            f"(their time will come from the fallback): {'; '.join(failures[:3])}"
            f"{' ...' if len(failures) > 3 else ''}")
    return 0


def _time_step(args, db, device: str) -> None:
    """The model's step timed whole beside its calls' sum: the device's step factor."""
    from ..progress import Progress, say
    from .step_factor import device_factor, precision_key
    from .step_timing import STEPS, WARMUP, time_step

    if args.dtype != "float32":
        say(f"its step is not timed: the profiler runs float32 or autocast, not {args.dtype} "
            f"throughout (no step factor)")
        return
    with Progress(WARMUP - 1 + STEPS, f"timing {args.model}'s step (pairs of steps)") as bar:
        step_s, calls_s = time_step(args.model, args.batch_size, db, device, args.threads,
                                    args.device, bar.advance, args.autocast)
    key = precision_key(args.dtype, args.autocast)
    db.save_step(device, args.model, args.batch_size, key, step_s, calls_s)
    factor = device_factor(db, device, key)
    say(f"its step: {step_s * 1e3:.2f} ms against its calls' {calls_s * 1e3:.2f} ms "
        f"({step_s / calls_s:.3f}x); sgdsim profile --estimate --step-factor scales by this "
        + (f"device's autocast {factor.line()}; an --autocast estimate takes it by default" if args.autocast
           else f"device's {factor.line()}"))


def _plan(args, status):
    from .collect import grid_calls, model_calls, this_device
    from .optypes import SAMPLED

    device = this_device(args.threads, args.device)
    if args.model:
        with status(f"tracing {args.model} on {'fake tensors' if args.autocast else 'the meta device'}"):
            return device, model_calls(args.model, args.batch_size, args.dtype, args.autocast)
    types = list(SAMPLED) if args.grid == "all" else [t.strip() for t in args.grid.split(",")]
    return device, grid_calls(types, args.samples, args.seed, args.dtype)


def _run(db, todo, how, bar) -> int:
    from .collect import measure_calls

    device, rng, repeats, failures, precision, reference = how
    written, batch, bounds = 0, [], 0
    with bar:
        for rec in measure_calls(todo, device, rng, repeats, failures=failures, precision=precision,
                                 reference=reference):
            bounds += rec.fwd_bound or rec.bwd_bound
            batch.append(rec)
            bar.advance()
            if len(batch) >= BATCH:
                written += db.upsert(batch)
                batch = []
        if batch:
            written += db.upsert(batch)
    if bounds:
        from ..progress import say
        say(f"{bounds} call(s) ran faster than this machine's timer resolves: stored as upper "
            "bounds (flagged; training sets them aside)")
    return written


def _known(db, device: str) -> set:
    return {r.key[1:] for r in db.load(device=device)}


def _check_measure(args) -> None:
    """Every option checked before the database or the clock; sets ``args.max_time_s``."""
    from ..units import parse_duration_with_unit_s
    from .optypes import OTHER_NAME, optype

    for name in ([] if not args.grid or args.grid == "all" else args.grid.split(",")):
        if optype(name.strip()).name == OTHER_NAME:
            raise ConfigError("'other' has no sampled grid: measure it from models "
                              "(sgdsim ops measure --model ...)")
    if args.model and args.batch_size is None:
        raise ConfigError("--model needs --batch-size")
    if args.grid and args.batch_size is not None:
        raise ConfigError("--batch-size applies to --model; a grid samples its own shapes")
    if args.autocast and not args.model:
        raise ConfigError("--autocast applies to --model (a grid's calls are timed in --dtype)")
    check_autocast(args.autocast, args.dtype)
    if args.grid and not args.step:
        raise ConfigError("--no-step applies to --model: a grid has no step to time")
    try:
        args.max_time_s = parse_duration_with_unit_s(args.max_time, "--max-time")
    except ConfigError as e:
        raise ConfigError(str(e) if str(e).startswith("--max-time") else f"--max-time: {e}") from None
    if not 0 <= args.precision < 1:
        raise ConfigError(f"--precision must be in 0..1 (a relative standard error), got {args.precision}")
    for name, value, low, high in (("--samples", args.samples, 1, 100000),
                                   ("--repeats", args.repeats, 2, 1000),
                                   ("--max-repeats", args.max_repeats, args.repeats, 10000),
                                   ("--threads", args.threads, 1, 1024),
                                   ("--batch-size", args.batch_size or 1, 1, 10 ** 9),
                                   ("--seed", args.seed, 0, 2 ** 63 - 1)):
        if not low <= value <= high:
            raise ConfigError(f"{name} must be in {low}..{high}, got {value}")


def _rng(seed: int):
    import numpy as np

    return np.random.default_rng(seed)
