"""The frozen result every analytical model returns."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CoarseResult:
    """Throughput in examples/s; per-station mean response times (s) and utilizations.

    ``regime`` says which sharing model produced the number (for async, the branch of Eq. 5);
    ``disciplines``: where Eq. 5 chose, both branches' throughputs (Eq. 3's and Eq. 4's, keyed
    by discipline), else empty.
    """

    model: str
    workers: int
    throughput: float
    step_time_s: float
    response_time_s: dict[str, float] = field(default_factory=dict)
    utilization: dict[str, float] = field(default_factory=dict)
    regime: str = ""
    equations: str = ""
    disciplines: dict[str, float] = field(default_factory=dict)

    @property
    def bottleneck(self) -> str:
        u = self.utilization
        return max(u, key=lambda k: u[k]) if u else ""
