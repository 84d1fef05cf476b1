"""The three inputs of an evaluation, as Calculon separates them, plus run control.

- ``Job``: what is trained (a fine or coarse profile; or several worker classes).
- ``Strategy``: how it is trained (architecture, mode, sharing, PS count, streams, order,
  overheads).
- ``Cluster``: what it runs on (bandwidth, per-flow cap, what ``netbench`` and ``calibrate``
  measured, prices).
- ``Control``: how hard the simulator works (seed, warm-up, steps, replications).

Units are the internal ones (bits/s, bytes, seconds); human units are parsed by the fronts
(``sgdsim.predict``, the CLI). ``sim_config`` is the one place the simulator's
``SimConfig`` is built from them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..analytic.coarse_profile import CoarseProfile, from_profile, to_profile
from ..analytic.two_way import TwoWay, check_table, with_busy
from ..errors import ConfigError
from ..hardware import Hardware, dynamics_apply
from ..profile.model import Profile
from ..sim.config import (ARCHS, MAX_PS_COUNT, MODES, ORDERS, STREAMS, SimConfig, check_bandwidth,
                          check_collective, check_joined, check_nodes, check_seed, joined_draws, pair)
from ..topology import check_host_cores
from .margin import MODEL_ERROR_REL, check_margin

SHARINGS = ("ps", "fcfs", "hybrid", "threshold")  # threshold: the coarse model's Eq. 5 only
DEFAULT_RHO_THRESHOLD = 0.6
MAX_REPLICATIONS = 100
MAX_PRICE = 1e9  # per node-hour: beyond, costs per epoch overflow
AnyProfile = Profile | CoarseProfile


@dataclass(frozen=True)
class JobClass:
    name: str
    profile: AnyProfile
    count: int = 1


@dataclass(frozen=True)
class Job:
    """One profile swept over worker counts, or fixed heterogeneous classes (one point)."""

    classes: tuple[JobClass, ...]
    heterogeneous: bool = False

    @classmethod
    def of(cls, profile: AnyProfile) -> Job:
        return cls((JobClass("default", profile),))

    @classmethod
    def mixed(cls, classes: list[tuple[str, AnyProfile, int]]) -> Job:
        if not classes:
            raise ConfigError("no worker classes given")
        return cls(tuple(JobClass(n, p, c) for n, p, c in classes), heterogeneous=True)

    @property
    def profile(self) -> AnyProfile:
        return self.classes[0].profile

    def fine(self) -> list[tuple[str, Profile, int]]:
        return [(c.name, fine_profile(c.profile), c.count) for c in self.classes]

    def coarse(self) -> list[tuple[CoarseProfile, int]]:
        return [(coarse_profile(c.profile), c.count) for c in self.classes]

    def default_ps_count(self) -> int:
        return max(fine_profile(c.profile).ps_count if isinstance(c.profile, Profile) else 1
                   for c in self.classes)


def fine_profile(p: AnyProfile) -> Profile:
    return to_profile(p) if isinstance(p, CoarseProfile) else p


def coarse_profile(p: AnyProfile) -> CoarseProfile:
    return p if isinstance(p, CoarseProfile) else from_profile(p)


@dataclass(frozen=True)
class Strategy:
    """How the job is distributed. ``sharing`` None: the papers' default for the model
    (``fine_sharing``); ``ps_count`` None: the profile's own placement."""

    arch: str = "ps"
    mode: str = "async"
    sharing: str | None = None
    ps_count: int | None = None
    streams: str = "fifo"
    window_bytes: float = 28e6
    order: str = "profiled"
    overhead_alpha_s_per_byte: float = 0.0
    overhead_beta_s: float = 0.0
    rho_threshold: float = DEFAULT_RHO_THRESHOLD
    collective: str = "ring"  # all-reduce algorithm (topology/collectives/)
    bucket_size_bytes: float | None = None  # DDP gradient buckets; None: one call per layer

    @classmethod
    def from_hardware(cls, hw: Hardware, **overrides) -> Strategy:
        """The defaults with the file's measured overheads (β; the calibrated receiver CPU α)."""
        kw = hw.predict_kwargs("ps")
        return cls(**{"overhead_alpha_s_per_byte": kw["overhead_alpha"],
                      "overhead_beta_s": kw["overhead_beta"], **overrides})

    def __post_init__(self):
        for what, value, allowed in (("arch", self.arch, ARCHS), ("mode", self.mode, MODES),
                                     ("streams", self.streams, STREAMS), ("order", self.order, ORDERS)):
            _choice(what, value, allowed)
        if self.sharing is not None:
            _choice("sharing", self.sharing, SHARINGS)
        if self.ps_count is not None and not 1 <= self.ps_count <= MAX_PS_COUNT:
            raise ConfigError(f"--ps-count must be from 1 to {MAX_PS_COUNT}, got {self.ps_count}")
        if not 0 < self.rho_threshold <= 1:
            raise ConfigError(f"--rho-threshold must be in (0, 1], got {self.rho_threshold}")
        check_collective(self.arch, self.collective, self.bucket_size_bytes)

    @property
    def fine_sharing(self) -> str:
        """The simulator's sharing: hybrid for sync PS (TPDS §3.1.1), else ps."""
        if self.sharing in ("ps", "fcfs", "hybrid"):
            return self.sharing
        return "hybrid" if (self.mode, self.arch) == ("sync", "ps") else "ps"

    @property
    def label(self) -> str:
        """A short name: async-ps, async-ps/2 (two servers), sync-ps, allreduce."""
        if self.arch == "allreduce":
            return "allreduce"
        n = self.ps_count or 1
        return f"{self.mode}-ps" + (f"/{n}" if n > 1 else "")


@dataclass(frozen=True)
class Cluster:
    """The machines and network. Prices per node-hour; ``ps_price_per_node_hour`` None: a PS
    node costs what a worker costs."""

    bandwidth_bps: float
    flow_cap_bps: float | None = None
    fcfs_weight: float = 0.5
    share_cv: float = 0.0
    join_boost: tuple = (1.0, 1.0)  # weight of a TCP flow joining a busy link, (pulls, pushes)
    join_after_s: tuple = (0.0, 0.0)  # ... once the youngest flow there has run this long
    join_delay_s: tuple = (0.0, 0.0)  # ... and the joiner itself this long (its onset)
    stall_prob: tuple = (0.0, 0.0)  # a transfer against traffic the other way stalls (sim/stalls.py)
    stall_mean_s: tuple = (0.0, 0.0)  # ... for an exponential time of this mean
    stall_incumbent_prob: tuple = (0.0, 0.0)  # a transfer under way stalls when one starts the other way
    stall_incumbent_mean_s: tuple = (0.0, 0.0)
    two_way_penalty: float = 0.0
    two_way_table: tuple | None = field(default=None, compare=False)
    two_way_busy: tuple = (None, None)  # training traffic's shares busy both ways (lab.busy)
    two_way_joined: tuple = (1.0, 1.0)  # a lone transfer's share once one the other way joined it
    two_way_joined_after_s: tuple = (0.0, 0.0)  # ... from this long after (sharing/fair.py)
    two_way_joined_draws: tuple = ((), ())  # or per join a measured (after_s, share), per direction
    measured_late_comer: dict | None = field(default=None, compare=False)  # Hardware.late_comer
    _busy_table: tuple | None = field(default=None, init=False, repr=False, compare=False)
    ring_latency_s: float = 0.0
    allreduce_compute_share: float = 0.0  # Tianshu §3.3: compute an all-reduce call occupies
    gpus_per_node: int = 1  # devices per node, sharing its NIC (bandwidth_bps is per node)
    intra_bandwidth_bps: float | None = None  # each device's link inside its node
    host_cores: int | None = None  # every worker on one host of this many cores (topology/hosts.py)
    host_contention: tuple = (0.0, 0.0)  # compute slower per other worker pulling, pushing (ditto)
    run_spread_rel: float = 0.0
    model_error_rel: float = MODEL_ERROR_REL  # added to fine intervals in quadrature (margin.py)
    price_per_node_hour: float = 0.0
    ps_price_per_node_hour: float | None = None

    def __post_init__(self):
        check_bandwidth(self.bandwidth_bps)
        check_nodes(self.gpus_per_node, self.intra_bandwidth_bps)
        check_host_cores(self.host_cores)
        if self.two_way_table is not None:
            if self.two_way_penalty > 0:
                raise ConfigError("give the two-way rule as a penalty or as a measured table, not both")
            object.__setattr__(self, "two_way_table", check_table(self.two_way_table))
        if self.two_way_busy != (None, None):
            if self.two_way_table is None:
                raise ConfigError("the two-way busy shares correct a measured two-way table: "
                                  "give the table too (a hardware file's two_way_table)")
            object.__setattr__(self, "_busy_table", with_busy(self.two_way_table, self.two_way_busy))
        for name in ("two_way_joined", "two_way_joined_after_s"):
            object.__setattr__(self, name, pair(getattr(self, name), name))
        check_joined(self.two_way_joined, self.two_way_joined_after_s)
        object.__setattr__(self, "two_way_joined_draws", joined_draws(self.two_way_joined_draws))
        if (self.two_way_joined != (1.0, 1.0) or any(self.two_way_joined_draws)) and self.two_way_table is None:
            raise ConfigError("the two-way joined shares correct a measured two-way table: "
                              "give the table too (a hardware file's two_way_table)")
        if not 0 <= self.run_spread_rel < 1:
            raise ConfigError(f"run spread must be a fraction in [0, 1), got {self.run_spread_rel}")
        object.__setattr__(self, "model_error_rel", check_margin(self.model_error_rel))
        for what, price in (("--price-per-node-hour", self.price_per_node_hour),
                            ("--ps-price-per-node-hour", self.ps_price_per_node_hour)):
            if price is not None and not 0 <= price <= MAX_PRICE:
                raise ConfigError(f"{what} must be a number from 0 to {MAX_PRICE:g}, got {price}")

    def two_way(self, ps_count: int | None = 1) -> TwoWay:
        return TwoWay(self.two_way_penalty, self.two_way_table_for(ps_count))

    def two_way_table_for(self, ps_count: int | None) -> tuple | None:
        """The table, with the busy shares where the PS count is one: they were measured with
        one PS, whose NIC carries every transfer; with several each NIC carries a share of the
        bytes, and the lab's 2-PS runs match the table without them
        (docs/validation/regimes/, finding 7)."""
        if self._busy_table is None or (ps_count or 1) != 1:
            return self.two_way_table
        return self._busy_table

    def two_way_joined_for(self, ps_count: int | None) -> dict:
        """The joined shares as simulator fields where they apply: a correction of the measured
        table for one PS, as the busy shares are (measured on one PS's NIC)."""
        if self.two_way_table is None or (ps_count or 1) != 1:
            return {}
        return {"two_way_joined": self.two_way_joined,
                "two_way_joined_after_s": self.two_way_joined_after_s,
                "two_way_joined_draws": self.two_way_joined_draws}

    def late_comer(self, strategy: Strategy) -> dict:
        """The simulator's join boosts and share spread for ``strategy``: the explicit ones, or
        else a hardware file's measured ones (``Hardware.predict_kwargs``'s default), which
        apply where ``predict`` applies them: async PS with one server, PS sharing, no flow cap."""
        explicit = dict(join_boost=self.join_boost, join_after_s=self.join_after_s,
                        join_delay_s=self.join_delay_s, share_cv=self.share_cv)
        given = self.join_boost != (1.0, 1.0) or self.share_cv
        if not self.measured_late_comer or given or not dynamics_apply(
                strategy.arch, strategy.mode, strategy.ps_count, strategy.fine_sharing,
                self.flow_cap_bps is not None):
            return explicit
        return self.measured_late_comer

    @classmethod
    def from_hardware(cls, hw: Hardware, arch: str, **overrides) -> Cluster:
        """The measured network of a hardware file (``Hardware.predict_kwargs``, the one
        mapping of the file to model inputs); ``overrides`` that are not None win. An
        explicit ``two_way_penalty`` replaces the file's table. Its late-comer dynamics are kept
        aside for the strategies they apply to (``late_comer``)."""
        kw = hw.predict_kwargs(arch)
        table = kw.get("two_way_table") if overrides.get("two_way_penalty") is None else None
        base = dict(bandwidth_bps=kw["bandwidth"], fcfs_weight=kw["fcfs_weight"],
                    two_way_penalty=0.0 if table is not None else kw.get("two_way_penalty", 0.0),
                    two_way_table=table, run_spread_rel=kw["run_spread"],
                    two_way_busy=kw.get("two_way_busy", (None, None)) if table is not None else (None, None),
                    **({"two_way_joined": kw["two_way_joined"],
                        "two_way_joined_after_s": kw["two_way_joined_after"],
                        "two_way_joined_draws": kw.get("two_way_joined_draws", ((), ()))}
                       if table is not None and "two_way_joined" in kw else {}),
                    ring_latency_s=kw.get("ring_latency", 0.0),
                    allreduce_compute_share=kw.get("allreduce_compute_share", 0.0),
                    host_cores=kw.get("host_cores"),
                    host_contention=kw.get("host_contention", (0.0, 0.0)),
                    measured_late_comer=hw.late_comer() or None,
                    **({"model_error_rel": kw["model_error"]} if "model_error" in kw else {}))
        return cls(**{**base, **{k: v for k, v in overrides.items() if v is not None}})

    def node_price(self, ps: bool) -> float:
        if ps and self.ps_price_per_node_hour is not None:
            return self.ps_price_per_node_hour
        return self.price_per_node_hour


@dataclass(frozen=True)
class Control:
    """Simulator effort. ``steps_per_worker``/``replications`` None: automatic."""

    seed: int = 0
    warmup_steps: int = SimConfig.warmup_steps
    steps_per_worker: int | None = None
    replications: int | None = None
    jitter_cv: float = 0.0
    timeline: bool = False

    def __post_init__(self):
        check_seed(self.seed)
        if self.replications is not None and not 1 <= self.replications <= MAX_REPLICATIONS:
            raise ConfigError(f"--replications must be from 1 to {MAX_REPLICATIONS}, got "
                              f"{self.replications}")
        if self.replications == 1 and self.steps_per_worker == 1:
            raise ConfigError("one run of one step per worker has no interval: give --steps 2 or "
                              "more, or --replications 2 or more")


def sim_config(strategy: Strategy, cluster: Cluster, control: Control) -> SimConfig:
    """The simulator's configuration (it validates the combination)."""
    return SimConfig(
        bandwidth_bps=cluster.bandwidth_bps, mode=strategy.mode, arch=strategy.arch,
        sharing=strategy.fine_sharing, fcfs_weight=cluster.fcfs_weight,
        **cluster.late_comer(strategy),
        stall_prob=cluster.stall_prob, stall_mean_s=cluster.stall_mean_s,
        stall_incumbent_prob=cluster.stall_incumbent_prob,
        stall_incumbent_mean_s=cluster.stall_incumbent_mean_s,
        two_way_penalty=cluster.two_way_penalty,
        two_way_table=cluster.two_way_table_for(strategy.ps_count),
        **cluster.two_way_joined_for(strategy.ps_count),
        ring_latency_s=cluster.ring_latency_s,
        allreduce_compute_share=cluster.allreduce_compute_share, flow_cap_bps=cluster.flow_cap_bps,
        collective=strategy.collective, gpus_per_node=cluster.gpus_per_node,
        intra_bandwidth_bps=cluster.intra_bandwidth_bps, host_cores=cluster.host_cores,
        host_contention=cluster.host_contention, bucket_size_bytes=strategy.bucket_size_bytes,
        streams=strategy.streams, window_bytes=strategy.window_bytes, order=strategy.order,
        overhead_alpha_s_per_byte=strategy.overhead_alpha_s_per_byte,
        overhead_beta_s=strategy.overhead_beta_s, ps_count=strategy.ps_count,
        jitter_cv=control.jitter_cv, seed=control.seed, warmup_steps=control.warmup_steps,
        steps_per_worker=control.steps_per_worker, timeline=control.timeline)


def _choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {what} {value!r} (choose from {', '.join(allowed)})")
