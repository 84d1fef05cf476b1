"""What every architecture provides (registered in ``__init__.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..profile.model import Profile

if TYPE_CHECKING:
    from ..analytic.coarse_profile import CoarseProfile
    from ..analytic.results import CoarseResult
    from ..sim.config import SimConfig
    from ..spec import Cluster, Host, Strategy


class Architecture(Protocol):
    name: str
    help: str
    modes: tuple[str, ...]  # the modes it can run
    options: tuple[str, ...]  # its own options (CLI dests); another architecture's are refused
    pulls: bool  # workers pull parameters (downlink transfers exist)
    parse_in_call: bool  # a transfer's receiver CPU (α·size + β) is part of the call, not its consumer's
    servers: bool  # parameter servers on nodes of their own (the planner rents them)
    tcp_dynamics: bool  # a hardware file's measured TCP dynamics were measured on its flows
    per_node_workers: bool  # with multi-device nodes, a node aggregates locally and is one worker

    def default_sharing(self, mode: str) -> str:
        """The simulator's sharing policy when none is given (a ``SHARINGS`` name)."""
        ...

    def label(self, mode: str, ps_count: int | None) -> str:
        """A short name for tables and the planner: async-ps, async-ps/2, sync-ps, allreduce."""
        ...

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        """Per simulated resource (``sim/plan.py``'s layout), the shared link it is, or −1
        for a resource exclusive to each worker."""
        ...

    def res_shared(self, resources: int, servers: int, host: Host) -> np.ndarray:
        """Per simulated resource, 1 where every worker queues for one exclusive resource (a
        server's CPU that charges per byte, ``spec.Host``), else 0 (each worker its own)."""
        ...

    def host_ops(self, profile: Profile, host: Host) -> Profile:
        """The profile with the ops that the hosts' CPU per byte lands on (``spec.Host``)."""
        ...

    def charge_host(self, profile: Profile, host: Host) -> Profile:
        """The profile with the hosts' CPU per byte charged to its compute ops (after
        ``host_ops``); what is not charged to an op goes into ``transfer_durations`` and
        ``coarse``."""
        ...

    def prepare(self, profile: Profile, config: SimConfig) -> Profile:
        """The profile as this architecture runs it (``Profile -> Profile`` transforms)."""
        ...

    def transfer_durations(self, rows: np.ndarray, ref: Profile, workers: int, config: SimConfig,
                           link_Bps: float) -> None:
        """Fill, in place, the durations of transfers that are not simulated flow by flow."""
        ...

    def coarse(self, classes: list[tuple[CoarseProfile, int]], strategy: Strategy, cluster: Cluster,
               fractions: tuple[float, ...]) -> CoarseResult:
        """The coarse model's closed form (TPDS §3) for one point."""
        ...
