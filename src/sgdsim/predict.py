"""The Python API behind ``sgdsim predict``: result objects, not text."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from .errors import ConfigError
from .profile.io import load_profile
from .profile.model import Profile
from .sim import SimConfig, WorkerClass, simulate
from .sim.simulate import SimResult, Timeline
from .units import parse_bandwidth_bps, parse_duration_s, parse_size_bytes


@dataclass(frozen=True)
class PredictionPoint:
    """One worker count's prediction. Throughput in examples/s, CI at 95 %."""

    workers: int
    throughput: float
    ci_low: float
    ci_high: float
    step_time_s: float
    ops_simulated: int
    bottleneck: str
    utilization: dict[str, float]
    steps_measured: int
    wall_s: float
    model: str = "fine"
    timeline: Timeline | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("timeline")
        return d


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


def _profile(p: Profile | str | os.PathLike) -> Profile:
    return p if isinstance(p, Profile) else load_profile(p)


def predict(profile: Profile | str | os.PathLike | None = None, *, workers="1-16",
            bandwidth: str | float = "10Gbps", mode: str = "async", arch: str = "ps",
            sharing: str = "ps", flow_cap: str | float | None = None, streams: str = "fifo",
            window: str | float = "28MB", order: str = "profiled",
            overhead_alpha: float = 0.0, overhead_beta: str | float = 0.0,
            ps_count: int | None = None,
            worker_profiles: list[tuple[str, Profile | str, int]] | None = None,
            jitter: float = 0.0, seed: int = 0, warmup: int = 50, steps: int | str = "auto",
            timeline: bool = False) -> list[PredictionPoint]:
    """Predict throughput per worker count with the fine-grained simulator.

    Mirrors ``sgdsim predict``: human units are accepted (``bandwidth="10Gbps"``,
    ``window="28MB"``), ``workers`` takes ``"1-16"``, ``"1,2,4"``, an int or a list.
    ``worker_profiles`` (heterogeneous workers) replaces ``profile``/``workers``: one point
    with every class. ``sharing="hybrid"`` averages the PS and FCFS estimates (TPDS §3.2.1).
    """
    config = SimConfig(
        bandwidth_bps=parse_bandwidth_bps(bandwidth), mode=mode, arch=arch, sharing=sharing,
        flow_cap_bps=None if flow_cap is None else parse_bandwidth_bps(flow_cap),
        streams=streams, window_bytes=parse_size_bytes(window), order=order,
        overhead_alpha_s_per_byte=float(overhead_alpha),
        overhead_beta_s=parse_duration_s(overhead_beta), ps_count=ps_count, seed=seed,
        jitter_cv=float(jitter),
        warmup_steps=int(warmup), steps_per_worker=_steps(steps), timeline=timeline)
    if worker_profiles:
        if profile is not None:
            raise ConfigError("give either a profile or --worker-profile classes, not both")
        classes = [WorkerClass(n, _profile(p), c) for n, p, c in worker_profiles]
        return [_point(classes, config)]
    if profile is None:
        raise ConfigError("no profile given")
    prof = _profile(profile)
    return [_point([WorkerClass("default", prof, w)], config) for w in parse_workers(workers)]


def _steps(steps) -> int | None:
    if steps in ("auto", None):
        return None
    try:
        return int(steps)
    except ValueError:
        raise ConfigError(f"--steps takes a number or 'auto', got {steps!r}") from None


def _point(classes: list[WorkerClass], config: SimConfig) -> PredictionPoint:
    if config.sharing != "hybrid":
        return _from_result(simulate(classes, config))
    a = simulate(classes, _with(config, sharing="ps"))
    b = simulate(classes, _with(config, sharing="fcfs", timeline=False))
    util = {k: (a.utilization[k] + b.utilization[k]) / 2 for k in a.utilization}
    return PredictionPoint(
        workers=a.workers, throughput=(a.throughput + b.throughput) / 2,
        ci_low=(a.ci_low + b.ci_low) / 2, ci_high=(a.ci_high + b.ci_high) / 2,
        step_time_s=(a.step_time_s + b.step_time_s) / 2,
        ops_simulated=a.ops_simulated + b.ops_simulated,
        bottleneck=max(util, key=lambda k: util[k]), utilization=util,
        steps_measured=a.steps_measured + b.steps_measured, wall_s=a.wall_s + b.wall_s,
        timeline=a.timeline)


def _with(config: SimConfig, **changes) -> SimConfig:
    from dataclasses import replace
    return replace(config, **changes)


def _from_result(r: SimResult) -> PredictionPoint:
    return PredictionPoint(
        workers=r.workers, throughput=r.throughput, ci_low=r.ci_low, ci_high=r.ci_high,
        step_time_s=r.step_time_s, ops_simulated=r.ops_simulated, bottleneck=r.bottleneck,
        utilization={k: float(v) for k, v in r.utilization.items()},
        steps_measured=r.steps_measured, wall_s=r.wall_s, timeline=r.timeline)
