"""``PredictionPoint``: one worker count's prediction, whichever model made it."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .sim.regimes import Regime
from .sim.simulate import Timeline


@dataclass(frozen=True)
class PredictionPoint:
    """One worker count's prediction. Throughput in examples/s.

    ``ci_low``/``ci_high``: for the simulator, a 95 % interval for the throughput of one run
    (it covers the spread between independent runs, lock-step regimes included); for the
    analytical models, equal to ``throughput``. ``regimes``: two entries when independent
    runs clustered around two values (``sim/regimes.py``), else empty.
    """

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
    regime: str = ""
    response_time_s: dict[str, float] = field(default_factory=dict)
    replications: int = 1
    regimes: tuple[Regime, ...] = ()
    timeline: Timeline | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("timeline")
        d["regimes"] = [asdict(r) for r in self.regimes]
        return d
