"""What to simulate: the execution strategy and the hardware, separate from the model (profile)."""
from __future__ import annotations

from dataclasses import dataclass

from ..analytic.two_way import TwoWay, check_table
from ..arch import ARCHITECTURES
from ..errors import ConfigError
from ..profile.model import MAX_PS_INDEX, Profile
from ..topology import COLLECTIVES, Topology, check_contention, check_host_cores

MODES = ("async", "sync")
ARCHS = tuple(ARCHITECTURES)
SHARINGS = ("ps", "fcfs", "hybrid")
STREAMS = ("fifo", "http2")
ORDERS = ("profiled", "tic", "reverse", "random")
COLLECTIVE_NAMES = tuple(COLLECTIVES)

# Documented limits (docs/simulator.md). Outside them the answer would be meaningless or the
# run would not end in reasonable time; each is refused in one line before any work.
MAX_SEED = 2**63 - 1
MIN_BANDWIDTH_BPS, MAX_BANDWIDTH_BPS = 1e3, 1e15  # 1 kbit/s .. 1 Pbit/s
MAX_OVERHEAD_BETA_S = 3600.0  # per message
MAX_OVERHEAD_ALPHA_S_PER_BYTE = 1e-3  # per byte: 1 ms/B is a 8 kbit/s receiver
MAX_SIM_WORKERS = 1024  # the simulator; the analytical models go to MAX_WORKERS
MAX_WORKERS = 100_000
MAX_POINTS = 2_000  # worker counts in one call
MAX_SIM_WORKER_SUM = 20_000  # simulated workers over all points of one call: 1-200, not 1-1024
MAX_STEPS = 100_000  # measured steps per worker
MAX_WARMUP = 10_000
MAX_PS_COUNT = MAX_PS_INDEX + 1
MAX_BUCKET_BYTES = 1e11


def check_bandwidth(bps: float, what: str = "bandwidth") -> None:
    if not MIN_BANDWIDTH_BPS <= bps <= MAX_BANDWIDTH_BPS:
        raise ConfigError(f"{what} must be between 1kbps and 1Pbps, got {bps:g} bit/s")


def check_seed(seed: int) -> None:
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"--seed must be an integer from 0 to 2^63-1, got {seed}")


def check_allreduce_compute_share(share: float, arch: str) -> None:
    if not 0 <= share < 1:
        raise ConfigError(f"--allreduce-compute-share must be a fraction in [0, 1), got {share}")
    if share > 0 and arch != "allreduce":
        raise ConfigError("--allreduce-compute-share applies to --arch allreduce")


def check_collective(arch: str, collective: str, bucket_size_bytes: float | None) -> None:
    """The all-reduce's algorithm and DDP buckets (a strategy's)."""
    _choice("collective", collective, COLLECTIVE_NAMES)
    given = [opt for opt, on in (("--collective", collective != "ring"),
                                 ("--bucket-size", bucket_size_bytes is not None)) if on]
    if given and arch != "allreduce":
        raise ConfigError(f"{given[0]} applies to --arch allreduce")
    if bucket_size_bytes is not None and not 1 <= bucket_size_bytes <= MAX_BUCKET_BYTES:
        raise ConfigError(f"--bucket-size must be from 1B to 100GB, got {bucket_size_bytes:g} bytes")


def check_nodes(gpus_per_node: int, intra_bandwidth_bps: float | None) -> None:
    """Multi-device nodes (a cluster's, either architecture)."""
    if intra_bandwidth_bps is not None:
        check_bandwidth(intra_bandwidth_bps, "--intra-bandwidth")
    Topology(MAX_BANDWIDTH_BPS, gpus_per_node, intra_bandwidth_bps)  # its own checks


@dataclass(frozen=True)
class SimConfig:
    """Strategy and hardware of one simulated configuration (the worker count comes apart).

    ``fcfs_weight``: the FCFS share of ``hybrid`` sharing (TPDS §3.1.1 uses 0.5; ``sgdsim
    netbench --lab --fanout N`` measures it for a real network).
    Units: bandwidth and flow cap in bits/s, window in bytes, alpha in s/byte, beta in s.
    ``steps_per_worker=None`` means automatic: run until the 95 % CI half-width is at most
    ``ci_rel_target`` of the mean (between ``min_steps_per_worker`` and a ceiling).
    """

    bandwidth_bps: float
    mode: str = "async"
    arch: str = "ps"
    sharing: str = "ps"
    fcfs_weight: float = 0.5  # hybrid = (1 - w)·PS + w·FCFS; the papers' mean is 0.5
    share_cv: float = 0.0  # PS sharing: flows draw lognormal weights of this CV (sharing/fair.py)
    join_boost: tuple = (1.0, 1.0)  # PS sharing: weight of a flow joining a busy link, (pulls, pushes)
    join_after_s: tuple = (0.0, 0.0)  # ... once the youngest flow there has run this long (sharing/fair.py)
    join_delay_s: tuple = (0.0, 0.0)  # ... and only after the joiner itself has run this long
    stall_prob: tuple = (0.0, 0.0)  # a transfer starting against traffic the other way stalls, (pulls, pushes)
    stall_mean_s: tuple = (0.0, 0.0)  # ... for an exponential time of this mean (sim/stalls.py)
    stall_incumbent_prob: tuple = (0.0, 0.0)  # a transfer under way stalls when one starts the other way
    stall_incumbent_mean_s: tuple = (0.0, 0.0)
    two_way_penalty: float = 0.0  # capacity lost per surplus flow the other way (analytic/two_way.py)
    two_way_table: tuple | None = None  # or measured shares [direction][n][m] (analytic/two_way.py)
    two_way_joined: tuple = (1.0, 1.0)  # a lone flow's share once one the other way joined it (sharing/fair.py)
    two_way_joined_after_s: tuple = (0.0, 0.0)  # ... from this long after that join
    two_way_joined_draws: tuple = ((), ())  # or per join one measured (after_s, share) pair, per direction
    ring_latency_s: float = 0.0  # all-reduce: fixed cost of each ring step of each call (plan.py)
    allreduce_compute_share: float = 0.0  # all-reduce: compute an overlapping call occupies (Tianshu §3.3)
    collective: str = "ring"  # all-reduce algorithm (topology/collectives/)
    gpus_per_node: int = 1  # devices per node, sharing its NIC (topology/); PS: evaluate's nodes
    intra_bandwidth_bps: float | None = None  # each device's link inside its node
    bucket_size_bytes: float | None = None  # DDP gradient buckets (topology/buckets.py); None: per layer
    host_cores: int | None = None  # every worker on one host of this many cores (topology/hosts.py)
    host_contention: tuple = (0.0, 0.0)  # compute slower per other worker pulling, pushing (ditto)
    flow_cap_bps: float | None = None
    streams: str = "fifo"
    window_bytes: float = 28e6
    order: str = "profiled"
    overhead_alpha_s_per_byte: float = 0.0
    overhead_beta_s: float = 0.0
    ps_count: int | None = None
    jitter_cv: float = 0.0
    seed: int = 0
    start_point: tuple[float, ...] = ()  # async: workers 2..W's start offsets in [0, 1) (sim/starts.py); () draws them
    warmup_steps: int = 5
    steps_per_worker: int | None = None
    ci_rel_target: float = 0.01
    min_steps_per_worker: int = 20
    max_ops: int = 200_000_000
    auto_max_ops: int = 5_000_000
    timeline: bool = False

    @property
    def two_way(self) -> TwoWay:
        return TwoWay(self.two_way_penalty, self.two_way_table)

    def topology(self, nic_bps: float) -> Topology:
        """The cluster of multi-device nodes, its NICs at ``nic_bps`` (the plan applies the flow cap)."""
        return Topology(nic_bps, self.gpus_per_node, self.intra_bandwidth_bps, self.ring_latency_s)

    def __post_init__(self):
        _choice("mode", self.mode, MODES)
        _choice("arch", self.arch, ARCHS)
        _choice("sharing", self.sharing, SHARINGS)
        _choice("streams", self.streams, STREAMS)
        _choice("order", self.order, ORDERS)
        if not 0.0 <= self.fcfs_weight <= 1.0:
            raise ConfigError(f"--fcfs-weight must be in [0, 1], got {self.fcfs_weight}")
        check_bandwidth(self.bandwidth_bps)
        if self.flow_cap_bps is not None:
            check_bandwidth(self.flow_cap_bps, "flow cap")
        check_seed(self.seed)
        if not all(0.0 <= u < 1.0 for u in self.start_point):
            raise ConfigError(f"start point coordinates must be in [0, 1), got {self.start_point}")
        if not self.window_bytes > 0:
            raise ConfigError(f"HTTP/2 window must be positive, got {self.window_bytes}")
        if not 0 <= self.overhead_alpha_s_per_byte <= MAX_OVERHEAD_ALPHA_S_PER_BYTE:
            raise ConfigError(f"--overhead-alpha must be in [0, {MAX_OVERHEAD_ALPHA_S_PER_BYTE:g}] "
                              f"s/byte, got {self.overhead_alpha_s_per_byte}")
        if not 0 <= self.overhead_beta_s <= MAX_OVERHEAD_BETA_S:
            raise ConfigError(f"--overhead-beta must be a duration from 0 to 1h, got "
                              f"{self.overhead_beta_s} s")
        if not 0 <= self.jitter_cv < 10:
            raise ConfigError(f"--jitter must be a coefficient of variation in [0, 10), got {self.jitter_cv}")
        if not 0 <= self.share_cv < 10:
            raise ConfigError(f"--share-cv must be a coefficient of variation in [0, 10), got {self.share_cv}")
        if not 0 <= self.ring_latency_s <= MAX_OVERHEAD_BETA_S:
            raise ConfigError(f"--ring-latency must be a duration from 0 to 1h, got {self.ring_latency_s} s")
        if self.ring_latency_s > 0 and self.arch != "allreduce":
            raise ConfigError("--ring-latency applies to --arch allreduce")
        check_allreduce_compute_share(self.allreduce_compute_share, self.arch)
        check_collective(self.arch, self.collective, self.bucket_size_bytes)
        check_nodes(self.gpus_per_node, self.intra_bandwidth_bps)
        check_host_cores(self.host_cores)
        if not 0 <= self.two_way_penalty < 1:
            raise ConfigError(f"--two-way-penalty must be a fraction in [0, 1), got {self.two_way_penalty}")
        if self.two_way_table is not None:
            if self.two_way_penalty > 0:
                raise ConfigError("give the two-way rule as a penalty or as a measured table, not both")
            object.__setattr__(self, "two_way_table", check_table(self.two_way_table))
        for name, option in _PAIRS:
            object.__setattr__(self, name, pair(getattr(self, name), option))
        check_join(self.join_boost, self.join_after_s + self.join_delay_s, self.sharing,
                   self.flow_cap_bps)
        check_stalls(self.stall_prob + self.stall_incumbent_prob,
                     self.stall_mean_s + self.stall_incumbent_mean_s, self.arch, self.sharing,
                     self.flow_cap_bps)
        check_joined(self.two_way_joined, self.two_way_joined_after_s)
        check_contention(self.host_contention, self.arch)
        object.__setattr__(self, "two_way_joined_draws", joined_draws(self.two_way_joined_draws))
        if self.share_cv > 0 and self.flow_cap_bps is not None:
            raise ConfigError("--share-cv (unequal TCP shares) cannot be combined with --flow-cap")
        if self.ps_count is not None and not 1 <= self.ps_count <= MAX_PS_COUNT:
            raise ConfigError(f"--ps-count must be from 1 to {MAX_PS_COUNT}, got {self.ps_count}")
        if self.arch == "allreduce" and (self.ps_count or 1) > 1:
            raise ConfigError("--ps-count applies to --arch ps, not allreduce")
        modes = ARCHITECTURES[self.arch].modes
        if self.mode not in modes:
            kind = {("sync",): "synchronous", ("async",): "asynchronous"}.get(modes, "restricted")
            raise ConfigError(f"--arch {self.arch} is {kind}: use --mode {' or '.join(modes)} "
                              f"with --arch {self.arch}")
        if self.streams == "http2" and self.order != "profiled":
            raise ConfigError("--order applies to --streams fifo (HTTP/2 serves streams in arrival order)")
        if not 0 <= self.warmup_steps <= MAX_WARMUP:
            raise ConfigError(f"--warmup must be from 0 to {MAX_WARMUP}, got {self.warmup_steps}")
        if self.steps_per_worker is not None and not 1 <= self.steps_per_worker <= MAX_STEPS:
            raise ConfigError(f"--steps must be from 1 to {MAX_STEPS}, got {self.steps_per_worker}")


@dataclass(frozen=True)
class WorkerClass:
    """``count`` workers computing with ``profile`` (heterogeneous workers, TPDS §4.2.3)."""

    name: str
    profile: Profile
    count: int

    def __post_init__(self):
        if self.count < 1:
            raise ConfigError(f"worker class {self.name!r}: count must be at least 1, got {self.count}")


def _choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {what} {value!r} (choose from {', '.join(allowed)})")


_PAIRS = (("join_boost", "--join-boost"), ("join_after_s", "--join-after"),  # (pulls, pushes)
          ("join_delay_s", "--join-delay"),
          ("stall_prob", "--stall-prob"), ("stall_mean_s", "--stall-mean"),
          ("stall_incumbent_prob", "--stall-incumbent"),
          ("stall_incumbent_mean_s", "--stall-incumbent-mean"),
          ("two_way_joined", "two_way_joined"), ("two_way_joined_after_s", "two_way_joined_after_s"),
          ("host_contention", "host_contention"))


def pair(value, what: str = "--join-boost") -> tuple[float, float]:
    """(pulls, pushes) from one number for both or two."""
    try:
        values = tuple(float(v) for v in value) if isinstance(value, (tuple, list)) else (float(value),)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} expects a number or two (pulls, pushes), got {value!r}") from None
    if len(values) not in (1, 2):
        raise ConfigError(f"{what} expects one value or two (pulls, pushes), got {value!r}")
    return values * 2 if len(values) == 1 else values


def check_stalls(probs, means_s, arch: str, sharing: str, flow_cap_bps: float | None) -> None:
    """Stalls (sim/stalls.py) hit transfers to and from a parameter server under PS sharing
    (a paused flow is one the fair policy serves at weight 0)."""
    for prob, mean_s in zip(probs, means_s):
        if not 0 <= prob <= 1:
            raise ConfigError(f"--stall-prob and --stall-incumbent must be probabilities in [0, 1], got {prob}")
        if not 0 <= mean_s <= MAX_OVERHEAD_BETA_S:
            raise ConfigError(f"--stall-mean and --stall-incumbent-mean must be durations from 0 to 1h, "
                              f"got {mean_s} s")
        if (prob > 0) != (mean_s > 0):  # one without the other would silently do nothing
            raise ConfigError("a stall probability needs its mean length and a mean its probability: "
                              "give --stall-prob with --stall-mean, --stall-incumbent with "
                              "--stall-incumbent-mean")
    if any(p > 0 and m > 0 for p, m in zip(probs, means_s)) and (
            arch != "ps" or sharing != "ps" or flow_cap_bps is not None):
        raise ConfigError("--stall-prob and --stall-incumbent (TCP stalls against traffic the other way) "
                          "apply to --arch ps with --sharing ps, without --flow-cap")


def check_joined(shares, after_s) -> None:
    """A lone flow's share once a flow the other way joined it, and from when (sharing/fair.py)."""
    for share in shares:
        if not 0 < share <= 1:
            raise ConfigError(f"two_way_joined must be a share in (0, 1], got {share}")
    _check_durations(after_s, "two_way_joined_after_s must be a duration")


def joined_draws(draws) -> tuple:
    """(pulls, pushes), each a tuple of measured (after_s, share) pairs of joined transfers
    (sharing/fair.py ``draw_joined``); an empty tuple: the direction's fixed step."""
    try:
        out = tuple(tuple((float(a), float(s)) for a, s in d) for d in draws)
    except (TypeError, ValueError):
        out = ()
    if len(out) != 2:
        raise ConfigError(f"two_way_joined_draws expects (pulls, pushes), each a list of "
                          f"(after_s, share) pairs, got {draws!r}")
    for d in out:
        check_joined([s for _, s in d], [a for a, _ in d])
    return out


def _check_durations(durations_s, what: str) -> None:
    for duration_s in durations_s:
        if not 0 <= duration_s <= MAX_OVERHEAD_BETA_S:
            raise ConfigError(f"{what} from 0 to 1h, got {duration_s} s")


def check_join(boosts, durations_s, sharing: str, flow_cap_bps: float | None) -> None:
    """The late-comer's boost (sharing/fair.py) is a weight of PS sharing without a flow cap.
    ``durations_s``: its ages (--join-after) and delays (--join-delay), pulls and pushes each."""
    for boost in boosts:
        if not 0 < boost <= 100:
            raise ConfigError(f"--join-boost must be a weight in (0, 100], got {boost}")
    _check_durations(durations_s, "--join-after and --join-delay must be durations")
    if boosts != (1.0, 1.0) and (sharing != "ps" or flow_cap_bps is not None):
        raise ConfigError("--join-boost (a TCP flow joining a busy link) applies to --sharing ps "
                          "without --flow-cap")
