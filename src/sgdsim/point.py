"""``PredictionPoint``: one worker count's prediction, whichever model made it."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .sim.regimes import Regime
from .sim.simulate import Timeline


@dataclass(frozen=True)
class PredictionPoint:
    """One worker count's prediction. Throughput in examples/s.

    ``ci_low``/``ci_high``: an ``interval_level`` (95 %) interval for the throughput of one
    real run: for the simulator, the spread between independent runs (lock-step regimes
    included) and the model's error; for the analytical models, their error alone. ``regimes``: two entries when independent
    runs clustered around two values (``sim/regimes.py``), else empty. ``model_error_rel``: the
    model's own error added to the simulator's interval (``evaluate/margin.py``), 0 if none.
    ``disciplines``: the coarse async model's two solutions where Eq. 5 chose one of them by
    its threshold (Eq. 3's and Eq. 4's examples/s, keyed by discipline); else empty.
    ``mean_half_width_rel``: the simulator's runs' mean known to ± this share of it (95 %), 0
    for one run or runs that agree. ``rounds_stopped``: why its rounds ended before that reached
    the target (``replicate.STOPS``), "" when it did; ``regime`` then says it in words.
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
    model_error_rel: float = 0.0  # the model's error the interval holds (evaluate/margin.py)
    margin_source: str = ""  # where that error came from (spec.Margin.source); "" if none
    interval_level: float = 0.95  # the share of real runs the interval is meant to hold
    disciplines: dict[str, float] = field(default_factory=dict)
    mean_half_width_rel: float = 0.0
    rounds_stopped: str = ""
    timeline: Timeline | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        # plain Python numbers for users (json, comparisons); utilizations a hair above 1 from
        # floating-point sums of busy times are 1
        for name in ("throughput", "ci_low", "ci_high", "step_time_s", "wall_s", "model_error_rel",
                     "mean_half_width_rel"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("workers", "ops_simulated", "steps_measured", "replications"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "utilization", {str(k): min(max(float(v), 0.0), 1.0)
                                                 for k, v in self.utilization.items()})
        for name in ("response_time_s", "disciplines"):
            object.__setattr__(self, name, {str(k): float(v) for k, v in getattr(self, name).items()})

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("timeline")
        d["regimes"] = [asdict(r) for r in self.regimes]
        return d


SATURATED = 0.8  # below this utilization no resource is called the bottleneck


def bottleneck_text(row: dict) -> str:
    """``uplink (93%)`` when a resource is saturated. Below SATURATED none is: the step's
    critical path (compute, then transfers, one after the other) bounds throughput, and the
    busiest resource is named as such. ``row``: ``PredictionPoint.to_dict()``."""
    name = row.get("bottleneck") or ""
    util = (row.get("utilization") or {}).get(name, 0.0)
    if util >= SATURATED or not name:
        return f"{name} ({util:.0%})" if name else "-"
    return f"none (busiest {name} {util:.0%})"
