"""The options of one prediction (``predict``, ``report``): the command line's parser. The
options become keywords (``parse/keywords.py``), through the hardware file
(``parse/hardware.py``); every output is checked, and every option the configuration would
ignore refused, before any work."""
from __future__ import annotations

import os

from ..analytic.models import MODELS
from ..errors import ConfigError
from ..outputs import check_distinct_outputs, check_output_path
from ..spec import ARCHITECTURES, COLLECTIVES, DEFAULT_RHO_THRESHOLD, MODES, ORDERS, SHARINGS, STREAMS
from ..spec.host import REDUCE_ON, TRANSPORTS
from .common import add_executor_arguments, executor_from
from ..progress import say
from ..parse.relevance import MEASURED_DYNAMICS

# The help of the measured dynamics' options (``parse.relevance.MEASURED_DYNAMICS`` lists them
# and says where each applies), one value for pulls and pushes or two: dest: (metavar, help).
DYNAMICS_HELP = {
    "join_boost": ("K[,K_PUSH]", "PS sharing: a flow joining a busy link gets K times the weight of "
        "the others (TCP's late-comer advantage; netbench --lab --joiner measures it into the hardware "
        "file); two values: pulls, pushes (default 1 = equal)"),
    "join_after": ("DURATION[,DURATION]", "--join-boost applies once the youngest flow on the link "
        "has run this long; two values: pulls, pushes (default 0s)"),
    "join_delay": ("DURATION[,DURATION]", "--join-boost applies once the joiner itself has run this "
        "long (its slow start; examples/lab/incumbent.py ramp measures it); pulls, pushes (default "
        "0s, or the --hardware file's)"),
    "stall_prob": ("P[,P_PUSH]", "PS: a transfer that starts against traffic the other way stalls "
        "with this probability (TCP timeouts; measured by examples/lab/joiner.py reverse runs); two "
        "values: pulls, pushes (default 0)"),
    "stall_mean": ("DURATION[,DURATION]", "--stall-prob: the mean of a stall's exponential length "
        "(default 0s)"),
    "stall_incumbent": ("P[,P_PUSH]", "PS: a transfer under way stalls with this probability when "
        "one starts the other way (examples/lab/incumbent.py measures it); pulls, pushes (default 0)"),
    "stall_incumbent_mean": ("DURATION[,DURATION]", "--stall-incumbent: the mean of its stall's "
        "exponential length (default 0s)"),
    "host_contention": ("A[,A_PUSH]", "PS, workers sharing one host's cores: a worker's compute "
        "runs 1 + A·(other workers pulling) + A_PUSH·(pushing) times slower while they transfer "
        "(measured from traced lab runs; topology/hosts.py) (default 0, or the --hardware file's)"),
}


def add_model_arguments(q) -> None:
    """The options of one prediction: shared by ``predict`` and ``report``."""
    _job_arguments(q)
    _sharing_arguments(q)
    _link_arguments(q)
    _node_arguments(q)
    _strategy_arguments(q)
    _host_arguments(q)
    _run_arguments(q)


def _host_arguments(q) -> None:
    """The hosts' CPU per byte (spec/host.py, docs/hosts.md); ``netbench --host-cpu`` measures it."""
    q.add_argument("--transport", default=None, choices=TRANSPORTS,
                   help="how bytes cross the NIC: tcp (the kernel's CPU per byte, --tcp-cpu) or rdma "
                        "(none) (default: the --hardware file's, else tcp)")
    q.add_argument("--tcp-cpu", type=float, default=None, metavar="S_PER_BYTE",
                   help="--transport tcp: CPU per byte a host sends or receives, e.g. 2e-9 "
                        "(default: the --hardware file's, else 0)")
    q.add_argument("--reduce-on", default=None, choices=REDUCE_ON,
                   help="where all-reduce sums: device (NCCL) or host (gloo, MPI; --reduce-cpu) "
                        "(default: the --hardware file's, else device)")
    q.add_argument("--reduce-cpu", type=float, default=None, metavar="S_PER_BYTE",
                   help="--reduce-on host: CPU per byte reduced, e.g. 2e-10 (default: the "
                        "--hardware file's, else 0)")
    q.add_argument("--server-cpu", type=float, default=None, metavar="S_PER_BYTE",
                   help="a parameter server's CPU per byte it receives (deserialise, apply) or "
                        "sends (serialise), e.g. 2e-9 (default: the --hardware file's, else 0)")


def _job_arguments(q) -> None:
    q.add_argument("--workers", default=None,
                   help="worker counts: a range 1-16, a list 1,2,4,8 or one number (default 1-16)")
    q.add_argument("--bandwidth", default=None,
                   help="NIC bandwidth (per node), e.g. 10Gbps, 100Mbps (default: the --hardware "
                        "file's, else 10Gbps)")
    q.add_argument("--hardware", default=None, metavar="FILE.json",
                   help="the network as sgdsim netbench measured it (bandwidth, overheads, FCFS "
                        "weight, two-way penalty) and sgdsim calibrate fitted it (receiver CPU, "
                        "the real runs' spread, which widens every interval) (default: nominal)")
    q.add_argument("--mode", default="async", choices=MODES,
                   help="async: each worker updates the PS on its own; sync: all wait for all")
    q.add_argument("--arch", default=ARCHITECTURES.names[0], choices=ARCHITECTURES.names,
                   help="; ".join(f"{n}: {a.help}" for n, a in ARCHITECTURES.items()))
    q.add_argument("--model", default="fine", choices=[*MODELS, "all"],
                   help="fine = simulator; coarse = TPDS analytical models; lin, cynthia = "
                        "baselines; all = every model that can honour the options")
    q.add_argument("--coarse", default=None, metavar="SPEC",
                   help="coarse profile instead of PROFILE: size=102MB,fwd=182ms,bwd=261ms,batch=128 "
                        "(units required; default: none)")


def _sharing_arguments(q) -> None:
    q.add_argument("--sharing", default=None, choices=SHARINGS.names,
                   help="link sharing between flows (default: hybrid for sync PS; async: ps in the "
                        "simulator, the Eq. 5 threshold in the coarse model)")
    q.add_argument("--fcfs-weight", type=float, default=None, metavar="W",
                   help="hybrid sharing = (1-W)·ps + W·fcfs (default: the --hardware file's "
                        "measured value, else 0.5 as in the papers)")
    q.add_argument("--model-error", default=None, metavar="FRACTION",
                   help="the model's error for one real run, added to every fine interval in "
                        "quadrature and the coarse model's interval, e.g. 0.12 or 12%%; 0: the "
                        "simulator's spread alone (default: the --hardware file's, else what the "
                        "lab validation measured at the --interval-level)")
    q.add_argument("--interval-level", default=None, metavar="LEVEL",
                   help="the share of real runs the intervals are meant to hold: 80%%, 85%%, 90%% "
                        "or 95%% (default), each with the margins the lab's runs call for "
                        "(docs/validation/torch/README.md)")
    q.add_argument("--share-cv", type=float, default=None, metavar="CV",
                   help="PS sharing: concurrent flows get unequal shares, lognormal weights of this "
                        "CV (default 0 = equal shares; netbench --fanout records a measured value)")
    for dest, _ in MEASURED_DYNAMICS:
        metavar, text = DYNAMICS_HELP[dest]
        q.add_argument("--" + dest.replace("_", "-"), default=None, metavar=metavar, help=text)


def _link_arguments(q) -> None:
    q.add_argument("--two-way-penalty", type=float, default=None, metavar="K",
                   help="a NIC direction with m more flows the other way loses K·m of its capacity "
                        "(default: the --hardware file's measured table or K, else 0)")
    q.add_argument("--ring-latency", default=None, metavar="DURATION",
                   help="--arch allreduce: fixed cost of each ring step of each all-reduce call, "
                        "e.g. 2ms (default: the --hardware file's measured value, else 0)")
    q.add_argument("--allreduce-compute-share", type=float, default=None, metavar="FRACTION",
                   help="--arch allreduce: fraction of a worker's compute an all-reduce call "
                        "occupies while it runs, slowing compute that overlaps it (Tianshu §3.3; "
                        "NCCL on a V100: 0.2; default: the --hardware file's measured value, "
                        "else 0)")
    q.add_argument("--collective", default=None, choices=COLLECTIVES.names,
                   help="--arch allreduce: the all-reduce algorithm, one of " + ", ".join(COLLECTIVES.names)
                        + " (topology/collectives/; default " + COLLECTIVES.names[0] + ")")


def _node_arguments(q) -> None:
    q.add_argument("--gpus-per-node", type=int, default=None, metavar="G",
                   help="devices per node, sharing its NIC (--bandwidth is per node); --workers "
                        "counts devices, multiples of G. With --arch ps a node all-reduces "
                        "locally, then pushes once (TPDS §4.4) (default 1)")
    q.add_argument("--intra-bandwidth", default=None, metavar="BW",
                   help="with --gpus-per-node: each device's link inside its node, "
                        "e.g. 150GB/s (NVLink), 12GB/s (PCIe 3 x16) (default: none)")
    q.add_argument("--bucket-size", default=None, metavar="SIZE",
                   help="--arch allreduce: PyTorch DDP gradient buckets, e.g. 25MB (DDP's default "
                        "is 25MiB; the first bucket 1MiB) (default: one call per layer)")
    q.add_argument("--host-cores", type=int, default=None, metavar="K",
                   help="every worker runs on one host of K cores (a lab of namespaces on one "
                        "machine): synchronous workers compute at once, each at K/W of a core "
                        "(default: the --hardware file's, else every worker has its own)")


def _strategy_arguments(q) -> None:
    q.add_argument("--rho-threshold", type=float, default=None, metavar="RHO",
                   help=f"coarse async PS: Eq. 5 threshold on the FCFS network utilization "
                        f"(default {DEFAULT_RHO_THRESHOLD})")
    q.add_argument("--flow-cap", default=None, metavar="BW",
                   help="cap on any single flow, e.g. 10Gbps (default: no cap)")
    q.add_argument("--streams", default=None, choices=STREAMS.names,
                   help="PS transfers: fifo (one at a time per connection) or http2 (interleaved "
                        "streams, flow-controlled by --window) (default fifo)")
    q.add_argument("--window", default=None, metavar="SIZE",
                   help="--streams http2: the flow-control window WIN, e.g. 28MB (default 28MB)")
    q.add_argument("--order", default=None, choices=ORDERS.names,
                   help="--streams fifo: order of parameter transfers (default: as profiled)")
    q.add_argument("--overhead-alpha", type=float, default=None, metavar="S_PER_BYTE",
                   help="receiver CPU per byte of every message, e.g. 1e-9 (default: the "
                        "--hardware file's calibrated value, else 0)")
    q.add_argument("--overhead-beta", default=None, metavar="DURATION",
                   help="receiver CPU per message, e.g. 0.2ms (default: the --hardware file's, else 0)")
    q.add_argument("--no-overlap", dest="overlap", action="store_const", const=False, default=None,
                   help="every transfer waits for the step's compute on its side: pushes for the "
                        "whole backward pass, the forward for every pull (TensorFlow 1.x's "
                        "transfers wait on the device's stream; default: as the profile's DAG allows)")
    q.add_argument("--ps-count", type=int, default=None, metavar="K",
                   help="--arch ps: number of parameter servers (default: the profile's placement)")


def _run_arguments(q) -> None:
    q.add_argument("--worker-profile", action="append", default=[], metavar="CLASS=PROFILE.json:COUNT",
                   help="heterogeneous workers: repeat once per class, instead of PROFILE and "
                        "--workers (default: none)")
    q.add_argument("--seed", type=int, default=None,
                   help="seed of the simulator's random numbers, 0 to 2^63-1 (default 0)")
    q.add_argument("--jitter", type=float, default=None, metavar="CV",
                   help="multiply compute durations by seeded noise of this coefficient of "
                        "variation (default 0)")
    q.add_argument("--warmup", type=int, default=None,
                   help="warm-up steps per worker, in each replication (default 5)")
    q.add_argument("--steps", default=None,
                   help="measured steps per worker, or auto: until the interval is within 1 %% "
                        "(default auto)")
    q.add_argument("--replications", default=None, metavar="R",
                   help="independent simulator runs per point (default auto: rounds of 4 until the "
                        "mean is known to 2%%); the interval covers their spread; 1 = one run")
    add_executor_arguments(q)


def run_prediction(args, profile=None, report: str | None = None, notes: bool = True):
    """Check everything (options, output files) before any work, then predict. Returns the
    points and the timeline files to write (by worker count). ``notes``: say what the inputs
    warn of (a command predicting several profiles says it once)."""
    from ..predict import parse_worker_profile, parse_workers, predict

    check_relevance(args)
    classes = [parse_worker_profile(s) for s in args.worker_profile]
    workers = "1-16" if args.workers is None else args.workers
    counts = parse_workers(workers) if not classes else [0]
    timeline = getattr(args, "timeline", None)
    targets = _timeline_targets(timeline, counts, args.force) if timeline is not None else {}
    if report is not None:
        check_output_path(report, args.force)
        check_distinct_outputs(("--report", report), *(("--timeline", t) for t in targets.values()))
    job, classes = _warn_shaky(profile if profile is not None else args.profile, classes, args)
    hw = hardware(args)
    if notes:
        _warn_other_buckets(args, hw)
        _warn_other_overlap(args, hw, job)
    points = predict(
        job, workers=workers,
        worker_profiles=classes or None, timeline=timeline is not None,
        model=args.model, coarse=args.coarse, hardware=hw, **given_keywords(args),
        executor=executor_from(args), on_skip=lambda why: say(f"note: {why}; skipped"))
    return points, targets


def _warn_shaky(job, classes, args):
    """Load the profiles once here, so that one measured on a busy machine is warned about
    (once each) before the prediction that rests on it."""
    from ..predict import load_any_profile
    from ..profiler.quality import warning_for

    def load(path):
        prof = load_any_profile(path)
        warning = warning_for(prof, path)
        if warning:
            say(warning)
        return prof

    if isinstance(job, str) and args.coarse is None:
        job = load(job)
    return job, [(name, load(path), count) for name, path, count in classes]


def check_relevance(args) -> None:
    """An option the configuration would ignore is an error (``parse/relevance.py``)."""
    from ..parse.relevance import check_relevance as check

    check(vars(args), args.model, heterogeneous=bool(args.worker_profile))


def hardware(args):
    """The --hardware file, or the nominal 10 Gbit/s network without one."""
    from ..hardware import Hardware, load_hardware

    return load_hardware(args.hardware) if args.hardware else Hardware.nominal(10e9)


def keywords(args, hw=None) -> dict:
    """The prediction's keywords: the options given, then the --hardware file's, then the
    defaults (``parse/keywords.py``). An option's dest is its keyword's name; ``--timeline``
    is a file here, the keyword a switch, so it is passed apart. ``hw``: the file, if read."""
    from ..parse.hardware import hardware_keywords

    return hardware_keywords(hw if hw is not None else hardware(args), given_keywords(args))


def given_keywords(args) -> dict:
    """The prediction's keywords as given on the command line (None: not given)."""
    from ..parse.keywords import KEYWORDS

    return {k: getattr(args, k) for k in KEYWORDS if k != "timeline" and hasattr(args, k)}


def _warn_other_buckets(args, hw) -> None:
    """A file calibrated on a DDP run with buckets, used for a prediction with others (or one
    call per layer): the fitted CPU per byte explains another job's overlap. Said, not refused:
    comparing bucket sizes is a legitimate use."""
    from ..units import format_size_bytes, parse_size_with_unit_bytes

    cal = hw.measured.get("calibration") if isinstance(hw.measured, dict) else None
    if not isinstance(cal, dict) or cal.get("arch") != args.arch or "collective" not in ARCHITECTURES[args.arch].options:
        return
    fitted = cal.get("bucket_size_bytes")
    wanted = None if args.bucket_size is None else parse_size_with_unit_bytes(args.bucket_size, "--bucket-size")
    if fitted != wanted:
        def text(b):
            return "one call per layer" if b is None else f"DDP buckets of {format_size_bytes(b)}"
        say(f"warning: {args.hardware} was calibrated on a run with {text(fitted)}; this prediction "
            f"has {text(wanted)}" + (f" (--bucket-size {format_size_bytes(fitted)} predicts the same job)"
                                     if fitted is not None else ""))


def _warn_other_overlap(args, hw, job) -> None:
    """A file calibrated on a job whose transfers waited for the step (``--no-overlap``, or a
    serial profile) used for one that overlaps them, or the reverse: its receiver CPU per byte
    was fitted to the other schedule. Said, not refused, as for buckets."""
    cal = hw.measured.get("calibration") if isinstance(hw.measured, dict) else None
    if not isinstance(cal, dict) or not isinstance(cal.get("overlap"), bool):
        return
    serial = args.overlap is False or getattr(getattr(job, "job", None), "overlap", None) is False
    if cal["overlap"] != serial:
        return
    if serial:
        say(f"warning: {args.hardware} was calibrated on a job whose transfers overlapped the "
            "step's compute; this prediction makes them wait for it")
    else:
        say(f"warning: {args.hardware} was calibrated on a job whose transfers waited for the "
            "step's compute; this prediction overlaps them (--no-overlap predicts the job it "
            "was calibrated on)")


def _timeline_targets(path: str, workers: list[int], force: bool) -> dict[int, str]:
    """Every file --timeline will write, checked before anything is simulated."""
    if not path.strip():
        raise ConfigError("--timeline: an empty file name")
    stem, ext = os.path.splitext(path)
    targets = {w: path if len(workers) == 1 else f"{stem}-w{w}{ext or '.json'}" for w in workers}
    for target in targets.values():
        check_output_path(target, force)
    return targets
