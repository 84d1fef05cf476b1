"""What every architecture provides (``ARCHITECTURES`` in ``__init__.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..profile.model import Profile

if TYPE_CHECKING:
    from ..analytic.coarse_profile import CoarseProfile
    from ..analytic.results import CoarseResult
    from ..evaluate.inputs import Cluster, Strategy
    from ..sim.config import SimConfig


class Architecture(Protocol):
    name: str
    help: str
    modes: tuple[str, ...]  # the modes it can run
    options: tuple[str, ...]  # its own options (CLI dests); another architecture's are refused

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        """Per simulated resource (``sim/plan.py``'s layout), the shared link it is, or −1
        for a resource exclusive to each worker."""
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
