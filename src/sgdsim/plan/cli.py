"""``sgdsim plan``: parse, check everything (outputs included) before any work, search, print."""
from __future__ import annotations

import math
from dataclasses import replace

from ..errors import ConfigError
from ..units import parse_bandwidth_bps, parse_duration_s, parse_number, parse_size_with_unit_bytes
from ..spec import COLLECTIVES
from ..topology.model import fills_nodes
from .llm_plan import PLAN_ONLY, add_llm_plan_arguments, run_llm_plan
from .search import strategy_names


def register(sub) -> dict:
    from ..cli.common import add_executor_arguments, add_large_model_arguments

    p = sub.add_parser(
        "plan", help="pick the configuration: workers, architecture, parameter servers, cost",
        description="Search strategies x workers x bandwidths with the coarse models, check the "
                    "finalists with the simulator, and answer: the cheapest configuration within "
                    "--target-epoch-time, the fastest within --budget-per-epoch, or (neither) the "
                    "Pareto frontier of epoch time and cost. Costs are per epoch, in the unit of "
                    "--price-per-node-hour (default 1: node-hours).")
    _add_search_arguments(p)
    _add_cluster_arguments(p)
    _add_goal_arguments(p)
    add_executor_arguments(p)
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="also write a plot: throughput and cost against workers per strategy (default: none)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    add_llm_plan_arguments(add_large_model_arguments(
        p, "batch=1536 (sequences per step, required) and any field to hold fixed, e.g. "
           "tp=8,recompute=selective; the rest is searched"))
    defaults = {a.dest: a.default for a in p._actions}
    return {"plan": lambda args: cmd_plan(args, defaults)}


def _add_search_arguments(p) -> None:
    p.add_argument("profile", nargs="?", help="profile JSON (or give --coarse), or a large model: "
                                              "gpt:..., llama:..., a config.json (with --layout batch=N)")
    p.add_argument("--coarse", default=None, metavar="SPEC",
                   help="coarse profile instead: size=102MB,fwd=182ms,bwd=261ms,batch=128 (default: none)")
    p.add_argument("--dataset-size", default=None, metavar="N",
                   help="examples per epoch, e.g. 1281167 or 1.28M (default: none; required with a profile)")
    p.add_argument("--workers", default="1-64", help="worker counts to consider (default 1-64)")
    p.add_argument("--bandwidth", action="append", default=None, metavar="BW",
                   help="NIC bandwidth, e.g. 10Gbps; repeat to compare several (default 10Gbps)")
    p.add_argument("--hardware", default=None, metavar="FILE.json",
                   help="the measured network (sgdsim netbench / calibrate); --bandwidth overrides its "
                        "rate (default: nominal, no file)")
    p.add_argument("--strategies", default=",".join(strategy_names()),
                   help=f"candidates, comma-separated (default {','.join(strategy_names())})")
    p.add_argument("--max-ps", type=int, default=4, metavar="K",
                   help="async PS is tried with 1..K parameter servers (default 4)")


def _add_cluster_arguments(p) -> None:
    p.add_argument("--gpus-per-node", type=int, default=1, metavar="G",
                   help="devices per node: --workers counts devices, a node's price buys G of them, "
                        "and only counts that fill whole nodes are tried (default 1)")
    p.add_argument("--intra-bandwidth", default=None, metavar="BW",
                   help="with --gpus-per-node: each device's link inside its node, e.g. 150GB/s "
                        "(default: none)")
    p.add_argument("--collective", default=None, choices=COLLECTIVES.names,
                   help="the all-reduce strategy's algorithm (default ring)")
    p.add_argument("--bucket-size", default=None, metavar="SIZE",
                   help="the all-reduce strategy's DDP gradient buckets, e.g. 25MB (default: one "
                        "call per layer)")
    p.add_argument("--no-overlap", action="store_true",
                   help="every transfer waits for the step's compute on its side (TensorFlow 1.x's "
                        "transfers; sgdsim predict --no-overlap)")
    p.add_argument("--price-per-node-hour", type=float, default=1.0, metavar="P",
                   help="price of a worker node per hour (default 1: costs in node-hours)")
    p.add_argument("--ps-price-per-node-hour", type=float, default=None, metavar="P",
                   help="price of a parameter-server node per hour (default: a worker's)")


def _add_goal_arguments(p) -> None:
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--target-epoch-time", default=None, metavar="DURATION",
                      help="the cheapest configuration whose epoch takes at most this: 90s, 30min, 2h "
                           "(default: no target; with neither goal, the Pareto frontier)")
    goal.add_argument("--budget-per-epoch", type=float, default=None, metavar="COST",
                      help="the fastest configuration whose epoch costs at most this (default: no budget)")
    p.add_argument("--knee", default="5%", metavar="PCT",
                   help="knee: one more worker adds less than this share of one worker's throughput")
    p.add_argument("--finalists", type=int, default=5, help="configurations checked by the simulator")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated finalists")


def cmd_plan(args, defaults: dict | None = None) -> int:
    from ..cli.common import check_applies
    from ..llm import is_description

    llm = is_description(args.profile)
    check_applies(args, defaults or {}, llm, PLAN_ONLY, either=("workers", "finalists"))
    if not 1 <= args.finalists <= MAX_FINALISTS:
        raise ConfigError(f"--finalists must be from 1 to {MAX_FINALISTS}, got {args.finalists}")
    if llm:
        print(run_llm_plan(args))
        return 0
    return _cmd_profile_plan(args)


def _cmd_profile_plan(args) -> int:
    from ..cli.common import executor_from
    from ..outputs import check_output_path
    from ..progress import say
    from .report import plot, to_json, to_text
    from .search import fine_curves, plan, plot_bandwidth, workers_for_plot

    req = build_request(args)
    if args.plot is not None:
        check_output_path(args.plot, args.force)
        _need_matplotlib()
    executor = executor_from(args)
    result = plan(req, executor, log=say)
    print(to_json(result) if args.format == "json" else to_text(result))
    if args.plot is not None:
        bw = plot_bandwidth(result)
        curves = fine_curves(req, executor, workers_for_plot(req.workers), bw)
        plot(result, curves, args.plot, bw)
        say(f"wrote {args.plot}")
    return 0


MAX_FINALISTS = 100  # each one is a simulated point with replications


def build_request(args):
    from ..hardware import load_hardware
    from ..predict import _job, parse_workers
    from ..spec.limits import MAX_POINTS, MAX_SIM_WORKERS
    from .objective import Prices
    from .search import PlanRequest, candidates

    if args.dataset_size is None:
        raise ConfigError("the following arguments are required: --dataset-size")
    job = _job(args.profile, args.coarse, None)
    names = [s.strip() for s in args.strategies.split(",") if s.strip()]
    hw = load_hardware(args.hardware) if args.hardware else None
    bucket = None if args.bucket_size is None else parse_size_with_unit_bytes(args.bucket_size, "--bucket-size")
    strategies = candidates(names, args.max_ps, args.collective, bucket, overlap=not args.no_overlap)
    workers = whole_nodes(parse_workers(args.workers), args.gpus_per_node)
    if len(workers) > MAX_POINTS:
        raise ConfigError(f"at most {MAX_POINTS:,} worker counts, got {len(workers):,} (give a "
                          "list such as 1,2,4,8,...)")
    if max(workers) > MAX_SIM_WORKERS:
        raise ConfigError(f"plan checks its finalists with the simulator, which handles up to "
                          f"{MAX_SIM_WORKERS} workers; got {max(workers):,} (sgdsim predict "
                          "--model coarse goes further)")
    bandwidths = [parse_bandwidth_bps(b) for b in args.bandwidth] if args.bandwidth else \
        [hw.bandwidth_bps if hw else 10e9]
    specs = [_specs(args, hw, b) for b in bandwidths]
    return PlanRequest(
        job=job, strategies=strategies, clusters=tuple(s[1] for s in specs),
        collective_cluster=tuple(_specs(args, hw, b, collective=True)[1] for b in bandwidths) if hw else (),
        prices=Prices(args.price_per_node_hour, args.ps_price_per_node_hour),
        workers=tuple(workers), dataset_size=parse_count(args.dataset_size),
        objective=_objective(args), knee_rel=parse_fraction(args.knee, "--knee"),
        finalists=args.finalists, control=replace(specs[0][2], seed=args.seed))  # the file's margin


def whole_nodes(workers: list[int], gpus_per_node: int) -> list[int]:
    """The counts that fill whole nodes (or part of one): a plan compares what can be rented."""
    from ..progress import say
    from ..topology.model import MAX_GPUS_PER_NODE

    # before any division by it: --gpus-per-node 0 was a ZeroDivisionError
    gpus_per_node = parse_number(gpus_per_node, "--gpus-per-node", lo=1, hi=MAX_GPUS_PER_NODE,
                                 integer=True)
    if gpus_per_node == 1:
        return workers
    kept = [w for w in workers if fills_nodes(w, gpus_per_node)]
    if not kept:
        raise ConfigError(f"no worker count in --workers fills nodes of {gpus_per_node} devices "
                          f"(give multiples of {gpus_per_node})")
    if len(kept) < len(workers):
        say(f"note: {len(kept)} of {len(workers)} worker counts fill nodes of {gpus_per_node} "
            "devices; planning those")
    return kept


def _specs(args, hw, bandwidth_bps: float, collective: bool = False):
    """The specs at one bandwidth, the cluster as parameter servers see it, or
    (``collective``) as a collective does: with the file's measured step latency and compute
    share; the control with the file's margin (its runs' spread, its model error if any)."""
    from ..parse.hardware import specs_from_hardware
    from ..parse.keywords import specs
    from ..spec import ARCHITECTURES

    nodes = dict(bandwidth=bandwidth_bps, gpus_per_node=args.gpus_per_node, intra_bandwidth=args.intra_bandwidth)
    if hw is None:
        return specs(**nodes)
    arch = next(n for n, a in ARCHITECTURES.items() if ("collective" in a.options) == collective)
    return specs_from_hardware(hw, arch, **nodes)


def _objective(args):
    from .objective import Objective

    if args.target_epoch_time is not None:
        t = parse_duration_s(args.target_epoch_time)
        if not t > 0:
            raise ConfigError(f"--target-epoch-time must be positive, got {args.target_epoch_time!r}")
        return Objective("target", target_epoch_time_s=t)
    if args.budget_per_epoch is not None:
        b = args.budget_per_epoch
        if not (math.isfinite(b) and b > 0):
            raise ConfigError(f"--budget-per-epoch must be a positive number, got {b}")
        return Objective("budget", budget_per_epoch=b)
    return Objective("frontier")


MAX_DATASET = 1e15  # examples per epoch


def parse_count(text: str) -> int:
    """'1281167', '1.28M', '50k' -> examples."""
    mult = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
    t = str(text).strip().replace(",", "").replace("_", "")
    number, scale = (t[:-1], mult[t[-1]]) if t and t[-1] in mult else (t, 1.0)
    try:  # ASCII digits only, bounded: float() takes '١٢' and int(round()) a 1e308
        value = parse_number(number, "--dataset-size", lo=0, hi=MAX_DATASET) * scale
    except ConfigError:
        raise ConfigError(f"--dataset-size takes a number of examples (e.g. 1281167 or 1.28M) "
                          f"up to {MAX_DATASET:.0e}, got {text!r}") from None
    if not 1 <= value <= MAX_DATASET:
        raise ConfigError(f"--dataset-size must be from 1 to {MAX_DATASET:.0e} examples, "
                          f"got {text!r}")
    return int(round(value))


def parse_fraction(text: str, option: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    t = str(text).strip()
    try:  # ASCII digits only
        value = parse_number(t[:-1], option, lo=-1e300, hi=1e300) / 100 if t.endswith("%") \
            else parse_number(t, option, lo=-1e300, hi=1e300)
    except ConfigError:
        raise ConfigError(f"{option} takes a share such as 5% or 0.05, got {text!r}") from None
    if not 0 < value < 1:
        raise ConfigError(f"{option} must be between 0 and 100 %, got {text!r}")
    return value


def _need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'sgdsim[plot]'") from None
