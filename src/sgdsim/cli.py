"""``sgdsim`` command line: a thin layer over the Python API (``sgdsim.predict`` & co)."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from .analytic.models import MODELS
from .errors import SgdsimError
from .evaluate.executors import BACKENDS
from .evaluate.inputs import SHARINGS
from .sim.config import ARCHS, MODES, ORDERS, STREAMS
from .outputs import check_output_path
from .units import format_bps

TABLE_COLS = ("workers", "model", "throughput", "ci_low", "ci_high", "step_time_s", "bottleneck", "ops_simulated")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other user error
        self.exit(2, f"sgdsim: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sgdsim", description="Predict distributed SGD training throughput.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _predict_parser(sub)
    _import_parser(sub)
    info = sub.add_parser("info", help="summarise a profile")
    info.add_argument("profile")
    cal = sub.add_parser("calibrate-threshold", help="pick the Eq. 5 threshold from measured throughputs")
    cal.add_argument("measured", help="CSV with columns workers,throughput (examples/s)")
    cal.add_argument("profile")
    cal.add_argument("--bandwidth", default="10Gbps")
    _calibrate_parser(sub)
    p.set_defaults(extra_commands=_register_extras(sub))
    return p


def _register_extras(sub) -> dict:
    """Commands that live with their own stage (lab, profiler)."""
    from .lab.cli import register as register_lab
    from .plan.cli import register as register_plan
    from .profiler.cli import cmd_profile, register as register_profile
    from .scaling.cli import register as register_optimize
    from .validate.cli import register as register_validate

    register_profile(sub)
    return {"profile": cmd_profile, **register_plan(sub), **register_optimize(sub),
            **register_lab(sub), **register_validate(sub)}


def _predict_parser(sub) -> None:
    q = sub.add_parser("predict", help="predict throughput per worker count (fine-grained simulator)")
    q.add_argument("profile", nargs="?", help="profile JSON (.json or .json.gz)")
    q.add_argument("--workers", default="1-16", help="range 1-16, list 1,2,4,8 or one number")
    q.add_argument("--bandwidth", default=None, help="NIC bandwidth, e.g. 10Gbps, 100Mbps (default 10Gbps)")
    q.add_argument("--hardware", default=None, metavar="FILE.json",
                   help="the network as sgdsim netbench measured it (bandwidth, overheads, FCFS "
                        "weight, two-way penalty) and sgdsim calibrate fitted it (receiver CPU, "
                        "the real runs' spread, which widens every interval)")
    q.add_argument("--mode", default="async", choices=MODES)
    q.add_argument("--arch", default="ps", choices=ARCHS)
    q.add_argument("--model", default="fine", choices=[*MODELS, "all"],
                   help="fine = simulator; coarse = TPDS analytical models; lin, cynthia = baselines")
    q.add_argument("--coarse", default=None, metavar="SPEC",
                   help="coarse profile instead of PROFILE: size=102MB,fwd=182ms,bwd=261ms,batch=128")
    q.add_argument("--fcfs-weight", type=float, default=None, metavar="W",
                   help="hybrid sharing = (1-W)·ps + W·fcfs (default: the --hardware file's "
                        "measured value, else 0.5 as in the papers)")
    q.add_argument("--share-cv", type=float, default=None, metavar="CV",
                   help="PS sharing: concurrent flows get unequal shares, lognormal weights of this "
                        "CV (default 0 = equal shares; netbench --fanout records a measured value)")
    q.add_argument("--two-way-penalty", type=float, default=None, metavar="K",
                   help="a NIC direction with m more flows the other way loses K·m of its capacity "
                        "(default: the --hardware file's measured table or K, else 0)")
    q.add_argument("--ring-latency", default=None, metavar="DURATION",
                   help="--arch allreduce: fixed cost of each ring step of each all-reduce call, "
                        "e.g. 2ms (default: the --hardware file's measured value, else 0)")
    q.add_argument("--sharing", default=None, choices=SHARINGS,
                   help="link sharing (default: hybrid for sync PS; async: ps in the simulator, Eq. 5 threshold in coarse)")
    q.add_argument("--rho-threshold", type=float, default=0.6,
                   help="Eq. 5 threshold on the FCFS network utilization (coarse async)")
    q.add_argument("--flow-cap", default=None, help="cap on any single flow, e.g. 10Gbps")
    q.add_argument("--streams", default="fifo", choices=STREAMS)
    q.add_argument("--window", default="28MB", help="HTTP/2 flow-control window WIN")
    q.add_argument("--order", default="profiled", choices=ORDERS)
    q.add_argument("--overhead-alpha", type=float, default=None, metavar="S_PER_BYTE",
                   help="receiver CPU per byte of every message (default: the --hardware file's "
                        "calibrated value, else 0)")
    q.add_argument("--overhead-beta", default=None, metavar="S", help="e.g. 0.2ms")
    q.add_argument("--ps-count", type=int, default=None)
    q.add_argument("--worker-profile", action="append", default=[], metavar="CLASS=PROFILE.json:COUNT")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--jitter", type=float, default=0.0, metavar="CV",
                   help="multiply compute durations by seeded noise of this coefficient of variation")
    q.add_argument("--warmup", type=int, default=None,
                   help="warm-up steps per worker, in each replication (default 5)")
    q.add_argument("--steps", default="auto", help="measured steps per worker, or auto")
    q.add_argument("--replications", default="auto", metavar="R",
                   help="independent simulator runs per point (default auto: rounds of 4 until the "
                        "mean is known to 2%%); the interval covers their spread; 1 = one run")
    add_executor_arguments(q)
    q.add_argument("--format", default="table", choices=["table", "csv", "json"])
    q.add_argument("--timeline", default=None, metavar="FILE.json", help="write a Chrome/Perfetto trace")
    q.add_argument("--force", action="store_true", help="overwrite an existing --timeline file")


def add_executor_arguments(q) -> None:
    q.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="simulate N points at once in local processes (default: one per core)")
    q.add_argument("--backend", default="local", choices=BACKENDS,
                   help="where simulated points run: local processes, or a Dask cluster")
    q.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="--backend dask: the scheduler, e.g. tcp://10.0.0.1:8786")


def executor_from(args):
    from .evaluate.executors import make_executor

    return make_executor(args.backend, args.jobs, args.scheduler)


def _calibrate_parser(sub) -> None:
    c = sub.add_parser("calibrate", help="fit what a profile misses from one real worker's step "
                                         "time; writes a hardware file")
    c.add_argument("profile", help="the standalone profile (sgdsim profile) of the job")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--step-time", metavar="T[,T...]",
                      help="measured mean step time of the worker, e.g. 1.72s; several runs: "
                           "1.72s,1.75s,1.70s (their spread widens every prediction interval)")
    what.add_argument("--throughput", metavar="X[,X...]",
                      help="measured examples/s of the single worker (all-reduce: of one rank); "
                           "several runs: 9.17,9.33,9.31")
    c.add_argument("--hardware", required=True, metavar="FILE.json",
                   help="the network as measured by sgdsim netbench (bandwidth, β, ...)")
    c.add_argument("--arch", default="ps", choices=["ps", "allreduce"],
                   help="ps: 1 worker + 1 PS was measured; allreduce: 2 ranks")
    c.add_argument("--mode", default="async", choices=["async", "sync"])
    c.add_argument("-o", "--output", required=True, help="the calibrated hardware file")
    c.add_argument("--force", action="store_true", help="overwrite an existing output file")


def _import_parser(sub) -> None:
    imp = sub.add_parser("import", help="convert a profile from another tool")
    isub = imp.add_subparsers(dest="source", required=True, parser_class=_Parser)
    pd = isub.add_parser("pipedream", help="PipeDream graph.txt per-layer profile")
    pd.add_argument("graph")
    pd.add_argument("--batch-size", type=int, required=True)
    ov = pd.add_mutually_exclusive_group()
    ov.add_argument("--overlap", dest="overlap", action="store_true", default=True)
    ov.add_argument("--no-overlap", dest="overlap", action="store_false")
    pd.add_argument("--update-s-per-mb", type=float, default=0.0)
    pd.add_argument("--model-name", default=None)
    pd.add_argument("-o", "--output", required=True)
    pd.add_argument("--force", action="store_true", help="overwrite an existing output file")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        commands = {"predict": cmd_predict, "import": cmd_import, "info": cmd_info,
                    "calibrate": cmd_calibrate_worker,
                    "calibrate-threshold": cmd_calibrate, **args.extra_commands}
        return commands[args.command](args)
    except SgdsimError as e:
        print(f"sgdsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sgdsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def cmd_predict(args) -> int:
    from .predict import parse_worker_profile, parse_workers, predict
    from .timeline import write_chrome_trace

    classes = [parse_worker_profile(s) for s in args.worker_profile]
    targets = _timeline_targets(args.timeline, parse_workers(args.workers) if not classes else [0],
                                args.force) if args.timeline else {}
    net = _network(args)
    points = predict(
        args.profile, workers=args.workers, mode=args.mode, arch=args.arch, sharing=args.sharing,
        flow_cap=args.flow_cap, streams=args.streams, window=args.window, order=args.order,
        ps_count=args.ps_count, worker_profiles=classes or None,
        jitter=args.jitter, seed=args.seed, warmup=args.warmup, steps=args.steps,
        timeline=bool(args.timeline), model=args.model, coarse=args.coarse,
        rho_threshold=args.rho_threshold, replications=args.replications, **net,
        executor=executor_from(args),
        on_skip=lambda why: print(f"note: {why}; skipped", file=sys.stderr))
    print(format_points(points, args.format))
    for pt in points:
        if pt.timeline is not None and targets:
            target = targets.get(pt.workers) or next(iter(targets.values()))
            n = write_chrome_trace(pt.timeline, target, overwrite=args.force)
            print(f"wrote {n} op slices to {target} (open in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def _network(args) -> dict:
    """Network keyword arguments: explicit options first, then the --hardware file, then defaults."""
    from .hardware import Hardware, load_hardware

    hw = load_hardware(args.hardware) if args.hardware else Hardware.nominal(10e9)
    net = hw.predict_kwargs(args.arch)  # share_cv is not in it: only when asked
    given = {"bandwidth": args.bandwidth, "overhead_beta": args.overhead_beta,
             "overhead_alpha": args.overhead_alpha, "fcfs_weight": args.fcfs_weight,
             "share_cv": args.share_cv, "two_way_penalty": args.two_way_penalty,
             "ring_latency": args.ring_latency}
    if args.two_way_penalty is not None:  # an explicit rule replaces the file's table
        net.pop("two_way_table", None)
    return {**net, **{k: v for k, v in given.items() if v is not None}}


def _timeline_targets(path: str, workers: list[int], force: bool) -> dict[int, str]:
    """Every file --timeline will write, checked before anything is simulated."""
    stem, ext = os.path.splitext(path)
    targets = {w: path if len(workers) == 1 else f"{stem}-w{w}{ext or '.json'}" for w in workers}
    for target in targets.values():
        check_output_path(target, force)
    return targets


def format_points(points, fmt: str) -> str:
    rows = [p.to_dict() for p in points]
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "table" and len({r["model"] for r in rows}) > 1:
        return _side_by_side(rows)
    util_keys = sorted({k for r in rows for k in r["utilization"]})
    if fmt == "csv":
        head = list(TABLE_COLS) + ["steps_measured"] + [f"util_{k}" for k in util_keys]
        lines = [",".join(head)]
        for r in rows:
            vals = [r[c] for c in TABLE_COLS] + [r["steps_measured"]]
            vals += [round(r["utilization"].get(k, 0.0), 6) for k in util_keys]
            lines.append(",".join(_csv(v) for v in vals))
        return "\n".join(lines)
    return _table(rows)


def _csv(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _table(rows) -> str:
    head = ["workers", "examples/s", "95% interval", "step time", "bottleneck (util)", "ops simulated"]
    body = []
    for r in rows:
        util = r["utilization"].get(r["bottleneck"], 0.0)
        body.append([str(r["workers"]), f"{r['throughput']:.1f}",
                     f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}]", f"{r['step_time_s'] * 1e3:.1f} ms",
                     f"{r['bottleneck']} ({util:.0%})", f"{r['ops_simulated']:,}"])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*line) for line in [head, *body]] + _regime_notes(rows))


def _regime_notes(rows) -> list[str]:
    """One line per bimodal point: both regimes and how often the runs fell into each."""
    notes = []
    for r in rows:
        if r.get("regimes"):
            lo, hi = r["regimes"]
            notes.append(f"W={r['workers']}: two regimes over {r['replications']} runs: "
                         f"{lo['throughput']:.1f} examples/s ({lo['share']:.0%} of runs) or "
                         f"{hi['throughput']:.1f} ({hi['share']:.0%}); the interval covers both")
    return notes


def _side_by_side(rows) -> str:
    """One line per worker count, one throughput column per model (examples/s)."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    by_w: dict[int, dict[str, dict]] = {}
    for r in rows:
        by_w.setdefault(r["workers"], {})[r["model"]] = r
    head = ["workers"] + models + ["fine bottleneck" if "fine" in models else "bottleneck"]
    body = []
    for w, per in by_w.items():
        cells = [str(w)]
        for m in models:
            r = per.get(m)
            cells.append("-" if r is None else f"{r['throughput']:.1f}" + (
                f" ±{(r['ci_high'] - r['ci_low']) / 2:.1f}" if m == "fine" else ""))
        ref = per.get("fine") or next(iter(per.values()))
        cells.append(ref["bottleneck"])
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    lines = [fmt.format(*line) for line in [head, *body]] + ["(examples/s; fine: ± half the 95 % interval)"]
    return "\n".join(lines + _regime_notes(rows))


def cmd_calibrate(args) -> int:
    from .calibrate import calibrate_threshold, read_measured

    measured = read_measured(args.measured)
    result = calibrate_threshold(args.profile, measured, args.bandwidth)
    print("rho_T  mean |err| %  max |err| %")
    for rho, mean, worst in result.table:
        mark = "  <- best" if rho == result.best else ""
        print(f"{rho:5.1f}  {mean:11.2f}  {worst:10.2f}{mark}")
    print(f"best --rho-threshold {result.best:g}")
    return 0


def cmd_calibrate_worker(args) -> int:
    from .calibrate_worker import calibrate, summary
    from .hardware import load_hardware, save_hardware
    from .profile.io import load_profile
    from .units import parse_duration_s

    check_output_path(args.output, args.force)
    prof = load_profile(args.profile)
    hw = load_hardware(args.hardware)
    if args.step_time is not None:
        steps = [parse_duration_s(v) for v in args.step_time.split(",")]
    else:
        steps = [prof.job.batch_size / x for x in _positive_floats(args.throughput, "--throughput")]
    out = calibrate(prof, steps, hw, args.arch, args.mode)
    save_hardware(out, args.output, force=args.force)
    print(f"{summary(out, args.arch)}; wrote {args.output}")
    return 0


def _positive_floats(text: str, option: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise SgdsimError(f"{option} takes numbers separated by commas, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise SgdsimError(f"{option} values must be positive, got {text!r}")
    return values


def cmd_import(args) -> int:
    from .profile.io import save_profile
    from .profile.pipedream import import_pipedream

    prof = import_pipedream(args.graph, args.batch_size, overlap=args.overlap,
                            update_s_per_mb=args.update_s_per_mb, model_name=args.model_name)
    save_profile(prof, args.output, overwrite=args.force)
    print(f"wrote {args.output}: {prof.job.model}, {prof.n_ops} ops, "
          f"{prof.model_bytes() / 1e6:.1f} MB of parameters, batch {prof.job.batch_size}", file=sys.stderr)
    return 0


def cmd_info(args) -> int:
    from .profile.io import load_profile

    p = load_profile(args.profile)
    kinds: dict[str, int] = {}
    for op in p.ops:
        kinds[op.resource] = kinds.get(op.resource, 0) + 1
    bw = format_bps(p.job.bandwidth_bps) if p.job.bandwidth_bps else "unknown"
    print(f"model {p.job.model}, batch {p.job.batch_size}, {p.n_steps} step(s), {p.n_ops} ops "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print(f"parameters {p.model_bytes() / 1e6:.2f} MB over {p.ps_count} PS; forward+backward "
          f"{p.mean_compute_s() * 1e3:.1f} ms; overlap {p.job.overlap}; profiled bandwidth {bw}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
