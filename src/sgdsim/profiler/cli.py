"""The ``sgdsim profile`` subcommand: ``register(subparsers)`` and ``cmd_profile(args)``.

Registered in ``sgdsim.cli.COMMANDS``; ConfigError/ProfileError print one line and exit 2 there.
"""
from __future__ import annotations


import argparse
import shlex

from ..errors import ConfigError, ProfileError
from ..outputs import check_output_path
from .precision import AUTOCAST, check_autocast, needs_scaler


def register(subparsers):
    """Add ``profile`` to ``subparsers`` (whose parser_class the caller chose)."""
    p = subparsers.add_parser(
        "profile", help="profile one worker of a PyTorch training job into a profile",
        description="Run a PyTorch training step with per-layer hooks and write an sgdsim "
                    "profile (ops named as by 'sgdsim import pipedream').")
    p.add_argument("model", help="zoo:NAME[?key=value&...] (mlp, small-cnn, small-resnet, "
                                 "resnet50, bert-base, gpt2, vit-base), FILE.py:FUNCTION or "
                                 "MODULE:FUNCTION returning (model, (inputs, target), loss_fn); or "
                                 "one block of a large model: gpt:..., llama:... or a config.json")
    p.add_argument("--batch-size", type=int, default=None, help="per-worker mini-batch (no default: required, "
                                                                "except for a large model's block)")
    blk = p.add_argument_group("one block of a large model (docs/llm.md)")
    blk.add_argument("--layout", default=None, metavar="SPEC",
                     help="tp=..,mb=..,precision=fp32|bf16|fp16 of the block measured (default tp=1,mb=1,bf16)")
    blk.add_argument("--seq", type=int, default=None, metavar="TOKENS",
                     help="sequence length (default: the description's)")
    p.add_argument("--steps", type=int, default=None, help="measured steps (default 30)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps (default 5)")
    p.add_argument("--device", default=None, help="cpu or cuda[:N] (default cpu)")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's own choice)")
    p.add_argument("--keep-memory", action="store_true",
                   help="glibc's malloc keeps freed memory, as a caching allocator (PyTorch's on "
                        "a GPU, jemalloc, tcmalloc) does: the steps do not pay the kernel to "
                        "fault in again what they freed (docs/profiler.md)")
    p.add_argument("--autocast", default=None, choices=AUTOCAST,
                   help="mixed precision: the forward and the loss under torch.autocast in this "
                        "type, parameters, gradients and the update float32 (as torch.amp "
                        "trains); with --estimate, each call in the precision autocast gives it "
                        "(default: none, the step in float32)")
    p.add_argument("--retries", type=int, default=None,
                   help="measure again up to this many times when the machine looks busy, "
                        "keeping the quietest measurement (default 1)")
    _add_estimate_args(p)
    ov = p.add_mutually_exclusive_group()
    ov.add_argument("--overlap", dest="overlap", action="store_true", default=True,
                    help="communication overlaps computation layer by layer (default)")
    ov.add_argument("--no-overlap", dest="overlap", action="store_false",
                    help="pull all parameters before, push all gradients after the pass")
    p.add_argument("-o", "--output", required=True, help="profile file (.json or .json.gz)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    return {"profile": cmd_profile}


def _add_estimate_args(p) -> None:
    """The ``--estimate`` group: time the step from the operator database instead."""
    est = p.add_argument_group("without the hardware (docs/ops.md)")
    est.add_argument("--estimate", action="store_true",
                     help="trace the step on the meta device and time its operators from the "
                          "operator database and the estimator, instead of running it")
    est.add_argument("--db", default=None, metavar="PATH|URL",
                     help="--estimate: the operator database (default: the per-user one, "
                          "see sgdsim ops --help)")
    est.add_argument("--target", default=None, metavar="DEVICE",
                     help="--estimate: a device name in the database (sgdsim ops stats); "
                          "'this-cpu' is this machine with --threads (default 1); "
                          "default: the database's only device")
    est.add_argument("--dtype", default=None, choices=("float32", "float16", "bfloat16"),
                     help="--estimate: the floating-point type the step runs in (its calls are "
                          "looked up and estimated in it; default float32)")
    est.add_argument("--step-factor", action=argparse.BooleanOptionalAction, default=None,
                     help="--estimate: scale the times by the device's step factor, the median "
                          "of its model steps timed whole over their calls' sum (sgdsim ops "
                          "measure --model times them). Default: on under --autocast when the "
                          "device has autocast steps timed (runs 60, 62), off otherwise (run 30); "
                          "docs/ops.md §4")


def cmd_profile(args) -> int:
    from ..profile.io import save_profile
    from ..progress import say

    from ..llm import is_description

    _check_output(args.output, args.force)  # before minutes of profiling, not after
    if is_description(args.model):
        from .block_cmd import cmd_block
        return cmd_block(args)
    for flag, value in (("--layout", args.layout), ("--seq", args.seq)):
        if value is not None:
            raise ProfileError(f"{flag} applies to a large model's block (gpt:..., llama:... or a config.json)")
    if args.batch_size is None:
        raise ProfileError("--batch-size is required: the per-worker mini-batch to profile")
    if args.estimate or args.db or args.target or args.dtype or args.step_factor is not None:
        return _cmd_estimate(args)
    args.steps = 30 if args.steps is None else args.steps
    args.warmup = 5 if args.warmup is None else args.warmup
    args.device = args.device or "cpu"
    run = _measure(args)
    save_profile(run.profile, args.output, overwrite=args.force)
    prof = run.profile
    layers = len({op.layer for op in prof.ops})
    say(f"wrote {args.output}: {prof.job.model}, {layers} layers, {prof.n_ops} ops, "
          f"{prof.model_bytes() / 1e6:.2f} MB of parameters, batch {prof.job.batch_size}, "
          f"forward+backward {prof.mean_compute_s() * 1e3:.2f} ms"
          + (f", forward under autocast {args.autocast}" if args.autocast else "")
          + (", gradients scaled as torch.amp.GradScaler does" if needs_scaler(args.autocast) else ""))
    say(run.overhead_line())
    from .memory import kernel_note

    line = kernel_note(prof.extra["profiler"])
    if line:
        say(line)
    if run.quality is not None and run.quality.shaky:
        from .quality import describe

        say(f"warning: {describe(run.quality.to_json())}")
    return 0


def _measure(args):
    """Profile with a progress bar over the pairs of steps (with an ETA), and a line saying how
    long it will take once the first pair is timed; a measurement taken again on a busy
    machine adds its pairs to the bar."""
    import time

    from ..progress import Progress, say
    from ..units import format_duration_s
    from .api import profile_model

    retries = 1 if args.retries is None else args.retries
    if retries < 0:
        raise ConfigError(f"--retries must be an integer >= 0, got {retries}")
    pairs = max(args.warmup - 1, 0) + args.steps
    first: list[float] = []

    def start() -> None:  # once the model and the device passed their checks: a refusal is one line
        say(f"profiling {args.model}, batch {args.batch_size}: {args.warmup} warm-up and "
            f"{args.steps} measured steps, each with and without hooks")
    with Progress(pairs, f"profiling {args.model} (pairs of steps)") as bar:
        def note(line: str) -> None:
            say(line)
            bar.add_total(pairs)

        def tick() -> None:  # the first pair also pays for loading: time the second
            bar.advance()
            first.append(time.perf_counter())
            if len(first) == 2 and (first[1] - first[0]) * (pairs - 2) > 2:
                pair_s = first[1] - first[0]
                say(f"about {format_duration_s(pair_s * (pairs - 2))} more (a pair of steps takes "
                    f"{pair_s * 1e3:.0f} ms)")

        return profile_model(args.model, args.batch_size, steps=args.steps, warmup=args.warmup,
                             device=args.device, threads=args.threads, overlap=args.overlap,
                             retries=retries, on_note=note, tick=tick,
                             keep_memory=args.keep_memory, autocast=args.autocast, on_start=start)


def _step_factor(args, db, target: str):
    """(the device's step factor or None if no step was timed there, whether it scales the
    estimate). Asked for, it must exist; unasked, an autocast estimate takes its own (runs 60
    and 62: within 13 % with it, 6-20 % low without), float32 none (run 30)."""
    from ..ops.step_factor import applies_by_default, device_factor, precision_key

    dtype = precision_key(args.dtype or "float32", args.autocast)
    factor = device_factor(db, target, dtype)
    if args.step_factor and args.dtype not in (None, "float32"):
        raise ConfigError(f"--step-factor: steps are timed in float32 or under autocast, "
                          f"not in {dtype} throughout: leave out --step-factor or --dtype")
    if args.step_factor and factor is None:
        db_flag = _db_flag(args.db)
        how = f" --autocast {args.autocast}" if args.autocast else ""
        raise ConfigError(f"--step-factor: no model step timed on {target} in {dtype}; sgdsim ops "
                          f"measure --model zoo:resnet50 --batch-size 4{how}{db_flag}, run there, times one")
    if args.step_factor is None:
        return factor, applies_by_default(args.autocast) and factor is not None
    return factor, args.step_factor


# what an autocast step cost beyond its calls, held out (docs/ops-runs.md, runs 59, 60 and 62)
AUTOCAST_UNSCALED = ("without that factor, bfloat16 autocast estimates ran 6-20 % below the steps on an "
                     "AMD EPYC, with the other models' autocast step factor within 13 % (docs/ops-runs.md, "
                     "runs 59-62)")


def _step_factor_line(factor, applied: bool, autocast: str | None = None) -> str:
    """Whether the times were scaled by what a step costs on the device beyond its calls."""
    if applied and autocast:
        return (f"the times are scaled by the device's autocast {factor.line()}: the default under "
                f"--autocast, --no-step-factor leaves it out ({AUTOCAST_UNSCALED})")
    if applied:
        return "the times are scaled by the device's " + factor.line()
    if autocast:
        return f"not scaled by the device's autocast {factor.line()}: --step-factor does ({AUTOCAST_UNSCALED})"
    return (f"not scaled by the device's {factor.line()}: --step-factor does (not the default: "
            f"held out, it put ResNet-50 out of 15 %, docs/ops-runs.md, run 30)")


def _autocast_steps_line(model: str, batch: int, autocast: str, db: str | None) -> str:
    """No autocast step timed on the device: how to time one, and why it matters."""
    db_flag = _db_flag(db)
    return (f"{AUTOCAST_UNSCALED}; no autocast step is timed on this device: sgdsim ops measure "
            f"--model {shlex.quote(model)} --batch-size {batch} --autocast {autocast}{db_flag} times "
            f"one there, and an estimate here is then scaled by it")


def _roofline_line(info: dict, db: str | None, target: str) -> str:
    """Which types came from the device's roofline, how far off it is there, what to run."""
    from ..ops.stats_hint import grid_commands

    roof, names = info["roofline"], ",".join(info["roofline_types"])
    # the types in each precision: under autocast the calls are of two (older profiles: one)
    grids = info.get("roofline_grids") or {info["dtype"]: list(info["roofline_types"])}
    db_flag = _db_flag(db)
    off = ", ".join(f"{e['median']:.0%} {d} (90th percentile {e['p90']:.0%})"
                    for d, e in (("forward", roof["error"]["fwd"]),
                                 ("backward", roof["error"]["bwd"])) if e["rows"])
    return (f"{', '.join(f'{n} {op}' for op, n in info['roofline_types'].items())} call(s) "
            f"neither measured nor estimated on {target}: "
            f"{info['time_fraction_roofline']:.0%} of the step time is a roofline of their "
            f"FLOPs and bytes, off by {off or 'an unmeasured amount'} on the {roof['rows']} "
            f"calls measured there"
            + (f" ({' and '.join(roof['unmeasured'])} unmeasured: no such calls)"
               if roof["unmeasured"] else "")
            + f"; measure and train them on that device: {grid_commands(grids, db)}, then "
            f"sgdsim ops train{db_flag} --op {names} --device {shlex.quote(target)}")


def _precision_line(prof, dtype: str) -> str:
    """What an estimate in another precision rests on: its calls are priced in ``dtype``
    throughout, while the bytes the network carries are the model's float32 parameters."""
    return (f"its calls are priced all in {dtype} (no casts), while the network carries its "
            f"parameters and gradients as float32 ({prof.model_bytes() / 1e6:.2f} MB of gradients "
            f"a step), as mixed precision keeps them; sent as {dtype} they would be half")


def _db_flag(db: str | None) -> str:
    """``ops.stats_hint.db_flag``, imported when a next command is printed: a measured profile
    never loads the operator database's modules."""
    from ..ops.stats_hint import db_flag

    return db_flag(db)


def _precision_flag(info: dict) -> str:
    """The flag that gives a command to run next the estimate's precision."""
    if info.get("autocast"):
        return f" --autocast {info['autocast']}"
    return f" --dtype {info['dtype']}" if info["dtype"] != "float32" else ""


def _autocast_line(prof, info: dict) -> str:
    """What a mixed-precision estimate rests on, and how much of it its casts are."""
    casts, roof = info["calls_by_source"].get("cast", 0), info.get("casts_by_roofline", 0)
    how = "priced as a ReLU over their elements in their two types"
    if roof:
        how += f" ({roof} by the device's roofline of their bytes: no ReLU estimator in a type)"
    priced = (f"; {casts} cast(s) not measured as such ({info['time_fraction_cast']:.0%} of the "
              f"step) {how}" if casts else "")
    scaler = (", each gradient unscaled before it (float16's gradient scaler, priced as an in-place "
              "multiply)" if needs_scaler(info["autocast"]) else "")
    return (f"mixed precision: each call in the precision autocast ({info['autocast']}) gives it, "
            f"its casts included{priced}; parameters, gradients and the update float32{scaler}; the "
            f"network carrying {prof.model_bytes() / 1e6:.2f} MB of gradients a step")


def _check_output(path: str, force: bool) -> None:
    check_output_path(path, force, exists_error=ProfileError)


def _check_estimate_args(args) -> None:
    """Options that an estimate cannot take, or not together: before the database is opened."""
    if not args.estimate:
        raise ConfigError("--db, --target, --dtype and --step-factor apply to --estimate; without it the model runs here")
    check_autocast(args.autocast, args.dtype)
    for flag, value in (("--steps", args.steps), ("--warmup", args.warmup),
                        ("--device", args.device), ("--retries", args.retries),
                        ("--keep-memory", args.keep_memory or None)):
        if value is not None:
            raise ConfigError(f"{flag} applies to a measured profile; --estimate runs nothing")


def _cmd_estimate(args) -> int:
    from ..ops.estimate import estimate_profile, pick_target
    from ..ops.db import open_db
    from ..profile.io import save_profile
    from ..progress import say, status

    _check_estimate_args(args)
    with open_db(args.db, create=False) as db:
        target = pick_target(db, args.target, args.threads)
        with status(f"estimating {args.model} on {target}"):
            factor, applied = _step_factor(args, db, target)
            prof = estimate_profile(args.model, args.batch_size, db, target, args.overlap,
                                    args.dtype or "float32", factor if applied else False,
                                    args.autocast)
    save_profile(prof, args.output, overwrite=args.force)
    info = prof.extra["estimated"]
    precision = f"autocast {info['autocast']}" if info.get("autocast") else info["dtype"]
    say(f"wrote {args.output}: {prof.job.model} on {target} in {precision}, batch {prof.job.batch_size}, "
        f"forward+backward {prof.mean_compute_s() * 1e3:.2f} ms; "
        f"{info['time_fraction_measured']:.0%} of it from measurements, "
        f"{info['time_fraction_estimated']:.0%} estimated, "
        f"{info['time_fraction_fallback']:.0%} from the untyped-call fallback; the step as an "
        f"allocator that keeps freed memory runs it ('sgdsim profile --keep-memory' measures "
        f"it so on a CPU)")
    if info["dtype"] != "float32":
        say(_precision_line(prof, info["dtype"]))
    if info.get("autocast"):
        say(_autocast_line(prof, info))
    if factor:
        say(_step_factor_line(factor, applied, args.autocast))
    elif args.autocast:
        say(_autocast_steps_line(args.model, args.batch_size, args.autocast, args.db))
    if info["roofline_types"]:  # no measurement, no estimator: a roofline, and how far off
        say(_roofline_line(info, args.db, target))
    unknown = info["calls_by_source"].get("unknown", 0)
    if unknown:
        say(f"{unknown} untyped call(s) (views, copies...) had no measurement to go by and "
            f"count as 0 s: sgdsim ops measure --model {shlex.quote(args.model)} --batch-size "
            f"{args.batch_size}{_precision_flag(info)}{_db_flag(args.db)} measures them")
    if info["outside_training"]:
        what = "; ".join(f"{op}: {', '.join(v[:3])}{' ...' if len(v) > 3 else ''}"
                         for op, v in sorted(info["outside_training"].items()))
        say(f"estimated outside what the estimators were trained on (guesses): "
            f"{what}; sgdsim ops measure --model {shlex.quote(args.model)} --batch-size {args.batch_size}"
            f"{_precision_flag(info)}{_db_flag(args.db)} measures these calls")
    return 0
