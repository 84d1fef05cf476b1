"""What a job runs on: nodes of devices, each node's link, and how the link behaves under
contention. Units: bytes/s, bytes, seconds; (pulls, pushes) pairs for the two directions of
a parameter server's transfers.

The contention fields describe TCP as measured (``netbench``, ``examples/lab/``); they are
weights and corrections of the simulator's fair sharing (``sim/sharing/fair.py``) and of the
coarse model's two-way rule (``analytic/two_way.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .host import Host
from .limits import (MAX_CONTENTION, MAX_CV, MAX_GPUS_PER_NODE, MAX_HOST_CORES,
                     MAX_OVERHEAD_ALPHA_S_PER_BYTE, check_bandwidth, check_duration, check_range,
                     durations, pair)
from .two_way import check_busy, check_shape, check_table


@dataclass(frozen=True)
class Link:
    """A node's NIC, per direction. ``step_latency_s``: the fixed cost of one step of a
    collective (``netbench --gloo``); ``overhead_*``: the receiver's CPU per byte and per
    message (``calibrate``)."""

    bandwidth_Bps: float
    flow_cap_Bps: float | None = None
    step_latency_s: float = 0.0
    overhead_alpha_s_per_byte: float = 0.0
    overhead_beta_s: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "bandwidth_Bps", check_bandwidth(self.bandwidth_Bps))
        if self.flow_cap_Bps is not None:
            object.__setattr__(self, "flow_cap_Bps", check_bandwidth(self.flow_cap_Bps, "flow cap"))
        check_duration(self.step_latency_s, "--ring-latency")
        check_range(self.overhead_alpha_s_per_byte, "--overhead-alpha", 0.0,
                    MAX_OVERHEAD_ALPHA_S_PER_BYTE, text=f"in [0, {MAX_OVERHEAD_ALPHA_S_PER_BYTE:g}] s/byte")
        check_duration(self.overhead_beta_s, "--overhead-beta")

    def ring_parse_s(self, size_bytes, ranks: int):
        """The receiver's CPU in one all-reduce call of ``size_bytes`` over ``ranks``: α per byte
        of the 2(N−1)/N·S a rank receives, which each ring step parses (reduces) before it
        forwards it, and β once per call; a layer of 0 bytes makes no call."""
        size = np.asarray(size_bytes, np.float64)
        if ranks < 2:
            return np.zeros_like(size)
        share = 2.0 * (ranks - 1) / ranks
        return np.where(size > 0, self.overhead_alpha_s_per_byte * share * size + self.overhead_beta_s, 0.0)


@dataclass(frozen=True)
class LateComer:
    """A TCP flow joining a busy link gets ``boost`` times the others' weight once the youngest
    flow there has run ``after_s`` and the joiner itself ``delay_s``; flows draw lognormal
    weights of CV ``share_cv``."""

    boost: tuple = (1.0, 1.0)
    after_s: tuple = (0.0, 0.0)
    delay_s: tuple = (0.0, 0.0)
    share_cv: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "boost", pair(self.boost, "--join-boost"))
        for b in self.boost:
            check_range(b, "--join-boost", 0.0, 100.0, lo_open=True, text="a weight in (0, 100]")
        object.__setattr__(self, "after_s", durations(self.after_s, "--join-after"))
        object.__setattr__(self, "delay_s", durations(self.delay_s, "--join-delay"))
        check_range(self.share_cv, "--share-cv", 0.0, MAX_CV, hi_open=True,
                    text="a coefficient of variation in [0, 10)")

    @property
    def active(self) -> bool:
        return self.boost != (1.0, 1.0) or self.share_cv > 0


@dataclass(frozen=True)
class Stalls:
    """A transfer starting against traffic the other way stalls with ``prob`` for an
    exponential time of mean ``mean_s``; one under way, when another starts the other way,
    with ``incumbent_prob`` (``sim/stalls.py``)."""

    prob: tuple = (0.0, 0.0)
    mean_s: tuple = (0.0, 0.0)
    incumbent_prob: tuple = (0.0, 0.0)
    incumbent_mean_s: tuple = (0.0, 0.0)

    def __post_init__(self):
        for name, option in (("prob", "--stall-prob"), ("incumbent_prob", "--stall-incumbent")):
            object.__setattr__(self, name, pair(getattr(self, name), option))
            for p in getattr(self, name):
                check_range(p, "--stall-prob and --stall-incumbent", 0.0, 1.0, text="probabilities in [0, 1]")
        for name, option in (("mean_s", "--stall-mean"), ("incumbent_mean_s", "--stall-incumbent-mean")):
            object.__setattr__(self, name, durations(getattr(self, name), option))
        for p, m in zip(self.prob + self.incumbent_prob, self.mean_s + self.incumbent_mean_s):
            if (p > 0) != (m > 0):  # one without the other would silently do nothing
                raise ConfigError("a stall probability needs its mean length and a mean its probability: "
                                  "give --stall-prob with --stall-mean, --stall-incumbent with "
                                  "--stall-incumbent-mean")

    @property
    def active(self) -> bool:
        return any(p > 0 for p in self.prob + self.incumbent_prob)


@dataclass(frozen=True)
class TwoWayRule:
    """Traffic both ways on a NIC: a direction with m more flows the other way loses
    ``penalty``·m of its capacity, or the measured ``table``; ``busy``, ``joined*``: measured
    corrections of the table, with one server (``spec/two_way.py``, ``sim/sharing/fair.py``).
    ``busy_shaped`` with ``busy_shape`` s: the busy shares fitted as c times the table's entry
    to the power s, for the simulator, whose transfers split between the two directions as
    they would; the coarse model, which places them binomially, keeps the flat ``busy``."""

    penalty: float = 0.0
    table: tuple | None = None
    busy: tuple = (None, None)
    joined: tuple = (1.0, 1.0)
    joined_after_s: tuple = (0.0, 0.0)
    joined_draws: tuple = ((), ())
    busy_shape: float = 0.0
    busy_shaped: tuple = (None, None)

    def __post_init__(self):
        check_range(self.penalty, "--two-way-penalty", 0.0, 1.0, hi_open=True, text="a fraction in [0, 1)")
        if self.table is not None:
            if self.penalty > 0:
                raise ConfigError("give the two-way rule as a penalty or as a measured table, not both")
            object.__setattr__(self, "table", check_table(self.table))
        object.__setattr__(self, "busy", _directions_shares(self.busy, "two_way_busy"))
        object.__setattr__(self, "busy_shaped", _directions_shares(self.busy_shaped, "two_way_busy_shaped",
                                                                   "two_way_busy_shaped"))
        object.__setattr__(self, "busy_shape", check_shape(self.busy_shape, "two_way_busy_shape"))
        if (self.busy_shape > 0) != (self.busy_shaped != (None, None)):
            raise ConfigError("two_way_busy_shaped and two_way_busy_shape go together: the shares "
                              "fitted with the table's shape to that power (examples/lab/busy.py --shape)")
        object.__setattr__(self, "joined", pair(self.joined, "two_way_joined"))
        object.__setattr__(self, "joined_after_s", durations(self.joined_after_s, "two_way_joined_after_s"))
        check_joined(self.joined, self.joined_after_s)
        object.__setattr__(self, "joined_draws", joined_draws(self.joined_draws))
        corrected = (self.busy != (None, None) or self.busy_shaped != (None, None) or self.joined != (1.0, 1.0)
                     or any(self.joined_draws))
        if corrected and self.table is None:
            raise ConfigError("the two-way busy and joined shares correct a measured two-way table: "
                              "give the table too (a hardware file's two_way_table)")


def _directions_shares(value, name: str, what: str = "two-way busy share") -> tuple:
    """(pulls, pushes) busy shares, each None or ``check_busy``'s, or one ConfigError line."""
    if len(tuple(value)) != 2:
        raise ConfigError(f"{name} expects (pulls, pushes), got {value!r}")
    return tuple(None if b is None else check_busy(b, what) for b in value)


def check_joined(shares, after_s) -> None:
    """A lone flow's share once a flow the other way joined it, and from when."""
    for share in shares:
        check_range(share, "two_way_joined", 0.0, 1.0, lo_open=True, text="a share in (0, 1]")
    for a in after_s:
        check_duration(a, "two_way_joined_after_s")


def joined_draws(draws) -> tuple:
    """(pulls, pushes), each a tuple of measured (after_s, share) pairs of joined transfers."""
    try:
        out = tuple(tuple((float(a), float(s)) for a, s in d) for d in draws)
    except (TypeError, ValueError, OverflowError):
        out = ()
    if len(out) != 2:
        raise ConfigError(f"two_way_joined_draws expects (pulls, pushes), each a list of "
                          f"(after_s, share) pairs, got {draws!r}")
    for d in out:
        check_joined([s for _, s in d], [a for a, _ in d])
    return out


@dataclass(frozen=True)
class Contention:
    """How a link shares itself. ``fcfs_weight``: hybrid sharing's FCFS part (TPDS §3.1.1:
    0.5). ``measured_late_comer``: a hardware file's, applied only where it was measured
    (async PS with one server; ``models.late_comer``), unless ``late_comer`` is given."""

    fcfs_weight: float = 0.5
    late_comer: LateComer = LateComer()
    measured_late_comer: LateComer | None = None
    stalls: Stalls = Stalls()
    two_way: TwoWayRule = TwoWayRule()

    def __post_init__(self):
        check_range(self.fcfs_weight, "--fcfs-weight", 0.0, 1.0)


@dataclass(frozen=True)
class Nodes:
    """``gpus_per_node`` devices share each node's link and have an ``intra_bandwidth_Bps``
    link each inside it; ``host_cores``: every worker on one host of that many cores, whose
    compute slows by ``host_contention`` per other worker pulling, pushing
    (``topology/hosts.py``); ``allreduce_compute_share``: the compute an all-reduce call
    occupies on a device (Tianshu §3.3)."""

    gpus_per_node: int = 1
    intra_bandwidth_Bps: float | None = None
    host_cores: int | None = None
    host_contention: tuple = (0.0, 0.0)
    allreduce_compute_share: float = 0.0

    def __post_init__(self):
        g = self.gpus_per_node
        if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GPUS_PER_NODE:
            raise ConfigError(f"--gpus-per-node must be from 1 to {MAX_GPUS_PER_NODE}, got {g}")
        if self.intra_bandwidth_Bps is not None:
            check_bandwidth(self.intra_bandwidth_Bps, "--intra-bandwidth")
        if g > 1 and self.intra_bandwidth_Bps is None:
            raise ConfigError("--gpus-per-node above 1 needs --intra-bandwidth (e.g. 150GB/s for "
                              "NVLink, 12GB/s for PCIe 3 x16)")
        c = self.host_cores
        if c is not None and not (type(c) is int and 1 <= c <= MAX_HOST_CORES):
            raise ConfigError(f"--host-cores must be a whole number of cores from 1 to {MAX_HOST_CORES}, "
                              f"got {c}")
        object.__setattr__(self, "host_contention", pair(self.host_contention, "host_contention"))
        for a in self.host_contention:
            check_range(a, "host_contention", 0.0, MAX_CONTENTION)
        check_range(self.allreduce_compute_share, "--allreduce-compute-share", 0.0, 1.0, hi_open=True,
                    text="a fraction in [0, 1)")


@dataclass(frozen=True)
class Cluster:
    """The machines and network of one prediction."""

    link: Link
    contention: Contention = Contention()
    nodes: Nodes = Nodes()
    host: Host = Host()  # the hosts' CPU per byte (spec/host.py)

    def __post_init__(self):
        if not isinstance(self.host, Host):
            raise ConfigError(f"Cluster.host must be a Host, got {self.host!r}")
        if self.contention.late_comer.share_cv > 0 and self.link.flow_cap_Bps is not None:
            raise ConfigError("--share-cv (unequal TCP shares) cannot be combined with --flow-cap")
