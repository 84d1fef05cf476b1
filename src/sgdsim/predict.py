"""The Python API behind ``sgdsim predict``: result objects, not text."""
from __future__ import annotations

import os

from .analytic.coarse_profile import CoarseProfile, load_coarse, parse_coarse
from .analytic.two_way import check_busy
from .errors import ConfigError, ProfileError
from .tagged_json import read_json
from .evaluate import Cluster, Control, Job, Strategy, evaluate
from .evaluate.executors import Executor
from .evaluate.inputs import DEFAULT_RHO_THRESHOLD
from .evaluate.margin import MODEL_ERROR_REL, check_margin
from .point import PredictionPoint
from .sim.config import MAX_WORKERS, pair
from .profile.io import load_profile
from .profile.model import Profile
from .units import parse_bandwidth_bps, parse_duration_s, parse_size_bytes


def parse_workers(spec: str | int | list[int]) -> list[int]:
    """'1-16' -> 1..16, '1,2,4,8' -> those, '4' -> [4]; at most MAX_WORKERS."""
    if isinstance(spec, int):
        out = [spec]
    elif isinstance(spec, (list, tuple)):
        out = [int(x) for x in spec]
    else:
        out = []
        for part in str(spec).split(","):
            out += _worker_range(part.strip(), spec)
    if not out or min(out) < 1:
        raise ConfigError(f"worker counts must be at least 1, got {spec!r}")
    if max(out) > MAX_WORKERS:
        raise ConfigError(f"at most {MAX_WORKERS:,} workers, got {max(out):,}")
    return sorted(set(out))


def _worker_range(part: str, spec) -> list[int]:
    lo_s, dash, hi_s = part.partition("-")
    if not lo_s.strip().isdigit() or (dash and not hi_s.strip().isdigit()):
        raise ConfigError(f"cannot parse worker counts {spec!r} (use e.g. 1-16, 1,2,4,8 or 4)")
    lo, hi = int(lo_s), int(hi_s) if dash else int(lo_s)
    if hi < lo:
        raise ConfigError(f"empty worker range {part!r} in {spec!r}")
    if hi > MAX_WORKERS:  # before building the list: 1-99999999999999 must not eat the memory
        raise ConfigError(f"at most {MAX_WORKERS:,} workers, got {hi:,}")
    return list(range(lo, hi + 1))


def parse_worker_profile(spec: str) -> tuple[str, str, int]:
    """'v100=prof.json:4' -> ('v100', 'prof.json', 4)."""
    name, eq, rest = spec.partition("=")
    path, colon, count = rest.rpartition(":")
    if not eq or not colon or not name or not path:
        raise ConfigError(f"bad --worker-profile {spec!r} (expected CLASS=PROFILE.json:COUNT)")
    if not count.isdigit() or not 1 <= int(count) <= MAX_WORKERS:
        raise ConfigError(f"bad worker count {count!r} in --worker-profile {spec!r} "
                          f"(1 to {MAX_WORKERS:,})")
    return name, path, int(count)


def _profile(p) -> Profile | CoarseProfile:
    """A profile object, a fine profile file, or a coarse profile file (format sgdsim-coarse)."""
    if isinstance(p, (Profile, CoarseProfile)):
        return p
    if str(p).endswith(".json") and _json_format(p) == "sgdsim-coarse":
        return load_coarse(str(p))
    return load_profile(p)


def _json_format(path) -> str | None:
    try:
        data = read_json(path, "profile", ProfileError)
    except ProfileError:
        return None  # load_profile reports the problem properly
    return data.get("format") if isinstance(data, dict) else None


def predict(profile: Profile | CoarseProfile | str | os.PathLike | None = None, *, workers="1-16",
            bandwidth: str | float = "10Gbps", mode: str = "async", arch: str = "ps",
            sharing: str | None = None, fcfs_weight: float = 0.5, share_cv: float = 0.0,
            join_boost: float | str | tuple = 1.0, join_after: str | float | tuple = 0.0,
            join_delay: str | float | tuple = 0.0,
            stall_prob: float | str | tuple = 0.0, stall_mean: str | float | tuple = 0.0,
            stall_incumbent: float | str | tuple = 0.0,
            stall_incumbent_mean: str | float | tuple = 0.0,
            two_way_penalty: float = 0.0, two_way_table=None, two_way_busy=None,
            two_way_joined: float | str | tuple = 1.0, two_way_joined_after: str | float | tuple = 0.0,
            two_way_joined_draws: tuple = ((), ()),
            run_spread: float = 0.0, model_error: float | str | None = None,
            ring_latency: str | float = 0.0, allreduce_compute_share: float = 0.0,
            flow_cap: str | float | None = None, streams: str = "fifo",
            window: str | float = "28MB", order: str = "profiled",
            overhead_alpha: float = 0.0, overhead_beta: str | float = 0.0,
            ps_count: int | None = None, collective: str = "ring", gpus_per_node: int = 1,
            intra_bandwidth: str | float | None = None, bucket_size: str | float | None = None,
            host_cores: int | None = None, host_contention: float | str | tuple = 0.0,
            worker_profiles: list[tuple[str, Profile | str, int]] | None = None,
            jitter: float = 0.0, seed: int = 0, warmup: int | None = None, steps: int | str = "auto",
            timeline: bool = False, model: str = "fine", coarse: str | CoarseProfile | None = None,
            rho_threshold: float = DEFAULT_RHO_THRESHOLD, replications: int | str = "auto",
            executor: Executor | None = None, on_skip=None) -> list[PredictionPoint]:
    """Predict throughput per worker count.

    Mirrors ``sgdsim predict``: human units are accepted (``bandwidth="10Gbps"``,
    ``window="28MB"``), ``workers`` takes ``"1-16"``, ``"1,2,4"``, an int or a list.
    ``model``: "fine" (simulator), "coarse" (TPDS analytical models), "lin", "cynthia"
    (baselines) or "all" (every model that can honour the options; ``on_skip(reason)`` is
    told about the others). ``sharing`` defaults to the papers' choices: hybrid (the mean of
    PS and FCFS, TPDS §3.1.1/§3.2.1) for sync PS; for async, ps in the simulator and Eq. 5
    ("threshold") in the coarse model. ``fcfs_weight`` w turns hybrid into (1 − w)·PS + w·FCFS
    (0.5: the papers' mean). ``share_cv`` > 0: under PS sharing, flows draw unequal shares
    (lognormal weights of that CV, as measured by ``netbench --lab --fanout``).
    ``two_way_penalty`` k > 0: a NIC direction with m more flows the other way loses k·m of its
    capacity; ``two_way_table[d][n][m]`` gives the measured shares instead (``netbench --lab
    --two-way`` measures both; ``analytic/two_way.py``). ``two_way_busy`` (pull, push): the
    shares training traffic gets while the NIC carries 3 or more transfers both ways
    (``sgdsim.lab.busy``), each one share or a list by flow count from 3 on (the last holds
    from there on); they replace those entries of the table, with one PS.
    ``two_way_joined`` (pull, push) and ``two_way_joined_after``: the share a lone transfer keeps
    once a transfer the other way joined it, from that long after the join (``sim/sharing/fair.py``;
    ``examples/lab/incumbent.py record-joined`` measures them); with the table, one PS.
    ``two_way_joined_draws`` (pulls, pushes), each a list of (after_s, share): the measured
    joined transfers one by one; a direction that has them draws one per join instead of its
    fixed step (the lab's do not all slow alike). ``ring_latency``
    (all-reduce): the fixed cost of every ring step of every call, e.g. ``"2ms"`` (``netbench
    --lab --gloo`` measures it); a call of M bytes on N ranks takes 2(N−1)·(M/(N·B) + latency).
    ``allreduce_compute_share`` (all-reduce, Tianshu §3.3): the fraction of a worker's compute
    an all-reduce call occupies while it runs (NCCL: 16 of a V100's 80 SMs, 0.2), so that
    compute overlapping it slows down; ``sgdsim netbench --interference`` measures it.
    ``collective`` (all-reduce): "ring" (flat) or "hierarchical" (``topology/collectives/``);
    ``gpus_per_node`` devices per node share the node's NIC (``bandwidth``) and each has an
    ``intra_bandwidth`` link inside it (e.g. ``"150GB/s"``); ``workers`` counts devices.
    ``bucket_size`` (e.g. ``"25MB"``): PyTorch DDP's gradient buckets, one call each, the
    first of 1 MiB; None: one call per layer.
    ``host_cores``: every worker runs on one host of that many cores (the lab); synchronous
    workers, computing at once, each get K/W of a core (``topology/hosts.py``).
    ``host_contention`` (pulls, pushes), PS: a worker's compute is that much slower per other
    worker on its host pulling, pushing (the lab's shared cores; ``topology/hosts.py``).
    ``run_spread``: the relative run-to-run noise of the real job (``sgdsim calibrate`` with
    several runs); every fine interval is at least mean·(1 ± run_spread). ``model_error``: the
    fine model's relative error for one run, added to each side of the interval in quadrature
    (``evaluate/margin.py``; None: ``MODEL_ERROR_REL``, as the lab's validation measured it;
    0: the simulator's spread alone). ``coarse`` gives a coarse
    profile (``"size=102MB,fwd=182ms,bwd=261ms,batch=128"`` or an object) instead of a file.
    ``worker_profiles`` (heterogeneous workers) replaces ``profile``/``workers``: one point.
    ``replications``: "auto" (default) runs rounds of independent simulations until the mean
    is known to ±2 % (``replicate.py``); the interval then covers the spread between runs and
    ``regimes`` reports two clusters of runs. 1: a single run with a batch-means interval.
    ``executor``: where the simulated points run (``evaluate.executors``; default: in this
    process, each point's replications on every core).
    This is the parsing front of ``evaluate.evaluate(job, strategy, cluster, workers)``.
    """
    strategy = Strategy(
        arch=arch, mode=mode, sharing=sharing, ps_count=ps_count, streams=streams,
        window_bytes=parse_size_bytes(window), order=order,
        overhead_alpha_s_per_byte=_non_negative(overhead_alpha, "overhead alpha"),
        overhead_beta_s=parse_duration_s(overhead_beta), rho_threshold=float(rho_threshold),
        collective=collective,
        bucket_size_bytes=None if bucket_size is None else parse_size_bytes(bucket_size))
    cluster = Cluster(
        bandwidth_bps=parse_bandwidth_bps(bandwidth),
        flow_cap_bps=None if flow_cap is None else parse_bandwidth_bps(flow_cap),
        fcfs_weight=float(fcfs_weight), share_cv=float(share_cv),
        join_boost=_pair(join_boost, "--join-boost"),
        join_after_s=_pair(join_after, "--join-after", duration=True),
        join_delay_s=_pair(join_delay, "--join-delay", duration=True),
        stall_prob=_pair(stall_prob, "--stall-prob"),
        stall_mean_s=_pair(stall_mean, "--stall-mean", duration=True),
        stall_incumbent_prob=_pair(stall_incumbent, "--stall-incumbent"),
        stall_incumbent_mean_s=_pair(stall_incumbent_mean, "--stall-incumbent-mean", duration=True),
        two_way_penalty=float(two_way_penalty), two_way_table=two_way_table,
        two_way_busy=_busy(two_way_busy),
        two_way_joined=_pair(two_way_joined, "two_way_joined"),
        two_way_joined_after_s=_pair(two_way_joined_after, "two_way_joined_after", duration=True),
        two_way_joined_draws=two_way_joined_draws,
        ring_latency_s=parse_duration_s(ring_latency),
        allreduce_compute_share=_non_negative(allreduce_compute_share, "allreduce compute share"),
        gpus_per_node=int(gpus_per_node),
        intra_bandwidth_bps=None if intra_bandwidth is None else parse_bandwidth_bps(intra_bandwidth),
        host_cores=host_cores, host_contention=_pair(host_contention, "host_contention"),
        run_spread_rel=float(run_spread),
        model_error_rel=MODEL_ERROR_REL if model_error is None else check_margin(model_error, "model error (--model-error)"))
    control = Control(
        seed=int(seed), warmup_steps=Control.warmup_steps if warmup is None else int(warmup),
        steps_per_worker=_steps(steps), replications=_replications(replications),
        jitter_cv=float(jitter), timeline=timeline)
    job = _job(profile, coarse, worker_profiles)
    counts = [] if worker_profiles else parse_workers(workers)
    return evaluate(job, strategy, cluster, counts, model, control, executor, on_skip)


def _pair(value, what: str, duration: bool = False) -> tuple[float, float]:
    """One value for pulls and pushes, or two: "1.4,1.2", (1.4, 1.2), durations with units
    (``sim.config.pair`` checks the numbers)."""
    if isinstance(value, str):
        parts = tuple(value.split(","))
    else:
        parts = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return pair(tuple(parse_duration_s(p) for p in parts) if duration else parts, what)


def _busy(value) -> tuple:
    """Busy shares (pulls, pushes): None, one share for both, or two, each a share, a list of
    shares by flow count from 3 on, or None (as the table)."""
    if value is None:
        return (None, None)
    parts = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(parts) != 2:
        raise ConfigError(f"two_way_busy expects a share or two (pulls, pushes), got {value!r}")
    return tuple(None if v is None else check_busy(v) for v in parts)


def _non_negative(value, what: str) -> float:
    x = float(value)
    if not x >= 0:
        raise ConfigError(f"{what} must be non-negative, got {value!r}")
    return x


def _job(profile, coarse, worker_profiles) -> Job:
    if worker_profiles:
        if profile is not None or coarse is not None:
            raise ConfigError("give either a profile or --worker-profile classes, not both")
        return Job.mixed([(n, _profile(p), c) for n, p, c in worker_profiles])
    if coarse is not None:
        if profile is not None:
            raise ConfigError("give either a profile or --coarse, not both")
        return Job.of(coarse if isinstance(coarse, CoarseProfile) else parse_coarse(coarse))
    if profile is None:
        raise ConfigError("no profile given")
    return Job.of(_profile(profile))


def _replications(value) -> int | None:
    return _count_or_auto(value, "--replications")  # Control checks the range


def _steps(steps) -> int | None:
    return _count_or_auto(steps, "--steps")


def _count_or_auto(value, option: str) -> int | None:
    if value in ("auto", None):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{option} takes a number or 'auto', got {value!r}") from None
