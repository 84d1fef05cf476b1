"""The Python API behind ``sgdsim predict``: result objects, not text."""
from __future__ import annotations

import json
import os
from dataclasses import replace

from .analytic.async_ps import DEFAULT_RHO_THRESHOLD
from .analytic.coarse_profile import CoarseProfile, from_profile, load_coarse, parse_coarse, to_profile
from .analytic.models import MODELS, run_analytic, unsupported
from .analytic.results import CoarseResult
from .errors import ConfigError
from .profile.io import load_profile
from .profile.model import Profile
from .profile.transforms import with_overhead
from .point import PredictionPoint
from .replicate import simulate_point
from .sim import SimConfig, WorkerClass
from .units import parse_bandwidth_bps, parse_duration_s, parse_size_bytes


def parse_workers(spec: str | int | list[int]) -> list[int]:
    """'1-16' -> 1..16, '1,2,4,8' -> those, '4' -> [4]."""
    if isinstance(spec, int):
        out = [spec]
    elif isinstance(spec, (list, tuple)):
        out = [int(x) for x in spec]
    else:
        out = []
        try:
            for part in str(spec).split(","):
                lo, _, hi = part.strip().partition("-")
                if hi and int(hi) < int(lo):
                    raise ConfigError(f"empty worker range {part.strip()!r} in {spec!r}")
                out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
        except ValueError:
            raise ConfigError(f"cannot parse worker counts {spec!r} (use e.g. 1-16, 1,2,4,8 or 4)") from None
    if not out or min(out) < 1:
        raise ConfigError(f"worker counts must be at least 1, got {spec!r}")
    return sorted(set(out))


def parse_worker_profile(spec: str) -> tuple[str, str, int]:
    """'v100=prof.json:4' -> ('v100', 'prof.json', 4)."""
    name, eq, rest = spec.partition("=")
    path, colon, count = rest.rpartition(":")
    if not eq or not colon or not name or not path:
        raise ConfigError(f"bad --worker-profile {spec!r} (expected CLASS=PROFILE.json:COUNT)")
    try:
        n = int(count)
    except ValueError:
        raise ConfigError(f"bad worker count {count!r} in --worker-profile {spec!r}") from None
    return name, path, n


def _profile(p) -> Profile | CoarseProfile:
    """A profile object, a fine profile file, or a coarse profile file (format sgdsim-coarse)."""
    if isinstance(p, (Profile, CoarseProfile)):
        return p
    if str(p).endswith(".json") and _json_format(p) == "sgdsim-coarse":
        return load_coarse(str(p))
    return load_profile(p)


def _json_format(path) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data.get("format") if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None  # load_profile reports the problem properly


def _fine(p: Profile | CoarseProfile) -> Profile:
    return to_profile(p) if isinstance(p, CoarseProfile) else p


def _coarse(p: Profile | CoarseProfile) -> CoarseProfile:
    return p if isinstance(p, CoarseProfile) else from_profile(p)


def predict(profile: Profile | CoarseProfile | str | os.PathLike | None = None, *, workers="1-16",
            bandwidth: str | float = "10Gbps", mode: str = "async", arch: str = "ps",
            sharing: str | None = None, fcfs_weight: float = 0.5, share_cv: float = 0.0,
            two_way_penalty: float = 0.0, two_way_table=None, run_spread: float = 0.0,
            ring_latency: str | float = 0.0,
            flow_cap: str | float | None = None, streams: str = "fifo",
            window: str | float = "28MB", order: str = "profiled",
            overhead_alpha: float = 0.0, overhead_beta: str | float = 0.0,
            ps_count: int | None = None,
            worker_profiles: list[tuple[str, Profile | str, int]] | None = None,
            jitter: float = 0.0, seed: int = 0, warmup: int | None = None, steps: int | str = "auto",
            timeline: bool = False, model: str = "fine", coarse: str | CoarseProfile | None = None,
            rho_threshold: float = DEFAULT_RHO_THRESHOLD, replications: int | str = "auto",
            on_skip=None) -> list[PredictionPoint]:
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
    --two-way`` measures both; ``analytic/two_way.py``). ``ring_latency``
    (all-reduce): the fixed cost of every ring step of every call, e.g. ``"2ms"`` (``netbench
    --lab --gloo`` measures it); a call of M bytes on N ranks takes 2(N−1)·(M/(N·B) + latency).
    ``run_spread``: the relative run-to-run noise of the real job (``sgdsim calibrate`` with
    several runs); every fine interval is at least mean·(1 ± run_spread). ``coarse`` gives a coarse
    profile (``"size=102MB,fwd=182ms,bwd=261ms,batch=128"`` or an object) instead of a file.
    ``worker_profiles`` (heterogeneous workers) replaces ``profile``/``workers``: one point.
    ``replications``: "auto" (default) runs rounds of independent simulations until the mean
    is known to ±2 % (``replicate.py``); the interval then covers the spread between runs and
    ``regimes`` reports two clusters of runs. 1: a single run with a batch-means interval.
    """
    n_reps = _replications(replications)
    if not 0 <= run_spread < 1:
        raise ConfigError(f"run spread must be a fraction in [0, 1), got {run_spread}")
    if sharing not in (None, "ps", "fcfs", "hybrid", "threshold"):
        raise ConfigError(f"unknown sharing {sharing!r} (choose from ps, fcfs, hybrid, threshold)")
    config = SimConfig(
        bandwidth_bps=parse_bandwidth_bps(bandwidth), mode=mode, arch=arch,
        sharing=sharing if sharing in ("ps", "fcfs", "hybrid") else _fine_default(mode, arch),
        fcfs_weight=float(fcfs_weight), share_cv=float(share_cv),
        two_way_penalty=float(two_way_penalty), two_way_table=two_way_table,
        ring_latency_s=parse_duration_s(ring_latency),
        flow_cap_bps=None if flow_cap is None else parse_bandwidth_bps(flow_cap),
        streams=streams, window_bytes=parse_size_bytes(window), order=order,
        overhead_alpha_s_per_byte=float(overhead_alpha),
        overhead_beta_s=parse_duration_s(overhead_beta), ps_count=ps_count, seed=seed,
        jitter_cv=float(jitter), steps_per_worker=_steps(steps),
        warmup_steps=SimConfig.warmup_steps if warmup is None else int(warmup),
        timeline=timeline)
    classes = _classes(profile, coarse, worker_profiles)
    counts = [sum(c for _, _, c in classes)] if worker_profiles else parse_workers(workers)
    n_ps = ps_count or max(_fine(p).ps_count for _, p, _ in classes)
    names = _models(model, config, sharing, n_ps, on_skip)
    points: list[PredictionPoint] = []
    for name in names:
        if name == "fine":
            for W in counts:
                scaled = classes if worker_profiles else [(n, p, W) for n, p, _ in classes]
                pt = simulate_point([WorkerClass(n, _fine(p), c) for n, p, c in scaled],
                                    config, n_reps)
                points.append(_with_run_spread(pt, run_spread))
        else:
            coarse_classes = [(_coarse(_with_overhead(p, config)), c) for _, p, c in classes]
            Ks = None if worker_profiles else counts
            points += [_from_coarse(r) for r in
                       run_analytic(name, coarse_classes, Ks, config, sharing, rho_threshold)]
    order = {m: i for i, m in enumerate(MODELS)}
    return sorted(points, key=lambda p: (p.workers, order[p.model]))


def _with_run_spread(pt: PredictionPoint, spread: float) -> PredictionPoint:
    """The interval for one real run also holds the real system's own run-to-run noise."""
    if spread <= 0:
        return pt
    m = pt.throughput
    return replace(pt, ci_low=min(pt.ci_low, m * (1 - spread)), ci_high=max(pt.ci_high, m * (1 + spread)))


def _with_overhead(p: Profile | CoarseProfile, config: SimConfig) -> Profile | CoarseProfile:
    """The analytical models see the overheads as compute time, as the simulator does."""
    a, b = config.overhead_alpha_s_per_byte, config.overhead_beta_s
    return with_overhead(_fine(p), a, b, config.arch) if a > 0 or b > 0 else p


def _fine_default(mode: str, arch: str) -> str:
    return "hybrid" if (mode, arch) == ("sync", "ps") else "ps"


def _classes(profile, coarse, worker_profiles):
    if worker_profiles:
        if profile is not None or coarse is not None:
            raise ConfigError("give either a profile or --worker-profile classes, not both")
        return [(n, _profile(p), c) for n, p, c in worker_profiles]
    if coarse is not None:
        if profile is not None:
            raise ConfigError("give either a profile or --coarse, not both")
        return [("default", coarse if isinstance(coarse, CoarseProfile) else parse_coarse(coarse), 1)]
    if profile is None:
        raise ConfigError("no profile given")
    return [("default", _profile(profile), 1)]


def _models(model: str, config: SimConfig, sharing, n_ps: int, on_skip) -> list[str]:
    if model == "all":
        out = []
        for name in MODELS:
            reason = unsupported(name, config, sharing, n_ps)
            if reason and on_skip:
                on_skip(reason)
            elif not reason:
                out.append(name)
        return out
    if model not in MODELS:
        raise ConfigError(f"unknown model {model!r} (choose from {', '.join(MODELS)}, all)")
    reason = unsupported(model, config, sharing, n_ps)
    if reason:
        raise ConfigError(reason)
    return [model]


def _from_coarse(r: CoarseResult) -> PredictionPoint:
    return PredictionPoint(
        workers=r.workers, throughput=r.throughput, ci_low=r.throughput, ci_high=r.throughput,
        step_time_s=r.step_time_s, ops_simulated=0, bottleneck=r.bottleneck,
        utilization=dict(r.utilization), steps_measured=0, wall_s=0.0, model=r.model,
        regime=r.regime, response_time_s=dict(r.response_time_s))


def _replications(value) -> int | None:
    n = _count_or_auto(value, "--replications")
    if n is not None and n < 1:
        raise ConfigError(f"--replications must be at least 1, got {value!r}")
    return n


def _steps(steps) -> int | None:
    return _count_or_auto(steps, "--steps")


def _count_or_auto(value, option: str) -> int | None:
    if value in ("auto", None):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{option} takes a number or 'auto', got {value!r}") from None
