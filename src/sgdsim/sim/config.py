"""What one simulated run reads: the three specs, and what differs between the runs of a point.

``SimConfig`` holds the strategy, the cluster and the control as they are (nothing is copied
out of them); a point's replications differ in their ``replication`` index (seed, start
offsets) and, for a mixed sharing policy, in the ``policy`` of each run. ``__post_init__``
checks the combination of the three, which no spec can check alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analytic.two_way import TwoWay, rule_for
from ..errors import ConfigError
from ..profile.model import Profile
from ..spec import SHARINGS, Cluster, Control, LateComer, Strategy
from ..spec.strategy import where
from ..topology import Topology

SEED_STRIDE = 1_000_003  # replication i runs with seed + i·SEED_STRIDE
NO_JOINED = ((1.0, 1.0), (0.0, 0.0), ((), ()))


@dataclass(frozen=True)
class SimConfig:
    """One run. ``steps_per_worker`` (the control's) None means automatic: run until the 95 %
    CI half-width is at most ``ci_rel_target`` of the mean (between ``min_steps_per_worker``
    and a ceiling). ``start_point``: async workers 2..W's start offsets in [0, 1)
    (``sim/starts.py``); () draws them."""

    strategy: Strategy
    cluster: Cluster
    control: Control = Control()
    replication: int = 0
    start_point: tuple[float, ...] = ()
    policy: str | None = None  # one run of a mixed sharing policy; None: the strategy's own
    timeline_off: bool = False  # the second run of a mixed policy draws no timeline
    ci_rel_target: float = 0.01
    min_steps_per_worker: int = 20
    max_ops: int = 200_000_000
    auto_max_ops: int = 5_000_000

    def __post_init__(self):
        if not all(0.0 <= u < 1.0 for u in self.start_point):
            raise ConfigError(f"start point coordinates must be in [0, 1), got {self.start_point}")
        arch, given = self.strategy.architecture, self._given_options()
        for option, flag in given:
            if option not in arch.options:
                raise ConfigError(f"{flag} applies to {where(option)}")
        capped = self.cluster.link.flow_cap_Bps is not None
        fair = SHARINGS[self.sharing].fair
        if self.late_comer.boost != (1.0, 1.0) and (not fair or capped):
            raise ConfigError("--join-boost (a TCP flow joining a busy link) applies to --sharing "
                              f"{fair_name()} without --flow-cap")
        if self.cluster.contention.stalls.active and ("stall_prob" not in arch.options or not fair or capped):
            raise ConfigError("--stall-prob and --stall-incumbent (TCP stalls against traffic the other "
                              f"way) apply to {where('stall_prob')} with --sharing {fair_name()}, without --flow-cap")

    def _given_options(self) -> list[tuple[str, str]]:
        c = self.cluster
        on = (("ring_latency", c.link.step_latency_s > 0, "--ring-latency"),
              ("allreduce_compute_share", c.nodes.allreduce_compute_share > 0, "--allreduce-compute-share"),
              ("host_contention", any(c.nodes.host_contention), "host_contention"))
        return [(option, flag) for option, given, flag in on if given]

    @property
    def sharing(self) -> str:
        return self.policy or self.strategy.fine_sharing

    @property
    def seed(self) -> int:
        return self.control.seed + self.replication * SEED_STRIDE

    @property
    def timeline(self) -> bool:
        return self.control.timeline and self.replication == 0 and not self.timeline_off

    @property
    def late_comer(self) -> LateComer:
        return late_comer(self.strategy, self.cluster)

    @property
    def two_way(self) -> TwoWay:
        return rule_for(self.cluster.contention.two_way, self.strategy.ps_count, shaped=True)

    @property
    def joined(self) -> tuple:
        """(shares, after_s, draws) of a lone flow joined by one the other way: a correction of
        the measured table for one PS, as its busy shares are; else none."""
        rule = self.cluster.contention.two_way
        if rule.table is None or (self.strategy.ps_count or 1) != 1:
            return NO_JOINED
        return rule.joined, rule.joined_after_s, rule.joined_draws

    def topology(self, nic_Bps: float | None = None) -> Topology:
        """The cluster of multi-device nodes, its NICs at ``nic_Bps`` (the plan applies the flow cap)."""
        c = self.cluster
        return Topology(c.link.bandwidth_Bps if nic_Bps is None else nic_Bps, c.nodes.gpus_per_node,
                        c.nodes.intra_bandwidth_Bps, c.link.step_latency_s)


def fair_name() -> str:
    return next(n for n, s in SHARINGS.items() if s.fair and s.simulated)


def late_comer(strategy: Strategy, cluster: Cluster) -> LateComer:
    """The explicit late-comer dynamics, or else a hardware file's measured ones where they
    apply (``Strategy.measured_dynamics_apply``)."""
    c = cluster.contention
    if c.measured_late_comer is None or c.late_comer.active:
        return c.late_comer
    if strategy.measured_dynamics_apply(cluster.link.flow_cap_Bps is not None):
        return c.measured_late_comer
    return c.late_comer


@dataclass(frozen=True)
class WorkerClass:
    """``count`` workers computing with ``profile`` (heterogeneous workers, TPDS §4.2.3)."""

    name: str
    profile: Profile
    count: int

    def __post_init__(self):
        if self.count < 1:
            raise ConfigError(f"worker class {self.name!r}: count must be at least 1, got {self.count}")
