"""How hard the simulator works, and what a fine interval holds beyond its simulated runs."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .limits import MAX_CV, MAX_REPLICATIONS, MAX_STEPS, MAX_WARMUP, check_range, check_seed

# The model's own error for one real run, fitted to the 66 single runs of issue 8's 22 lab
# points and checked on 85 held-out runs (docs/validation/model-error/).
MODEL_ERROR_REL = 0.1042  # 10.412 % rounded up at the fourth decimal
# The same at each interval level the user may ask for (--interval-level), and the coarse
# model's, fitted the same way to the same runs with the simulator's 95 % interval rescaled to
# the level (normal quantiles); held-out coverage in docs/validation/torch/README.md.
LEVELS = (0.80, 0.85, 0.90, 0.95)
MODEL_ERROR_BY_LEVEL = {0.80: 0.0468, 0.85: 0.0770, 0.90: 0.0936, 0.95: MODEL_ERROR_REL}
# The coarse model's error per family, fitted the same way on the same runs
# (examples/lab/interval_levels.py): the closed forms' (sync PS, all-reduce: 21 runs) and the
# MVA of async PS's (45 runs), whose errors differ by half.
COARSE_ERROR_BY_LEVEL = {0.80: 0.0765, 0.85: 0.0795, 0.90: 0.0978, 0.95: 0.1081}
COARSE_ASYNC_ERROR_BY_LEVEL = {0.80: 0.0897, 0.85: 0.1123, 0.90: 0.1135, 0.95: 0.2292}
MEASURED = "measured on lab runs"  # where the default margin comes from
GIVEN = "as set for this prediction"  # a hardware file's model_error_rel, --model-error


@dataclass(frozen=True)
class Margin:
    """The fine interval for one real run holds at least the real runs' spread
    (``run_spread_rel``, from calibration) and the model's error in quadrature
    (``model_error_rel``); ``source`` says where the model's error came from. ``level``: the
    share of real runs the interval is meant to hold; ``coarse_error_rel``: the coarse
    model's error, its interval (``coarse_async_error_rel`` for async PS)."""

    model_error_rel: float = MODEL_ERROR_REL
    run_spread_rel: float = 0.0
    source: str = MEASURED
    level: float = 0.95
    coarse_error_rel: float = COARSE_ERROR_BY_LEVEL[0.95]
    coarse_async_error_rel: float = COARSE_ASYNC_ERROR_BY_LEVEL[0.95]
    # a pilot calibration's uncertainty (95 %) on the goodput: a throughput moves at most as
    # much as the bandwidth it rests on, so it bounds the prediction's (calibrate_pilot.py)
    fit_rel: float = 0.0
    # an estimated profile's own error (its operators' estimates, time-weighted: the profile's
    # step_error_rel), added in quadrature like the fit's
    profile_rel: float = 0.0

    @classmethod
    def at_level(cls, level: float, run_spread_rel: float = 0.0, model_error_rel=None,
                 fit_rel: float = 0.0) -> Margin:
        """The measured margins at ``level``, or ``model_error_rel`` for both models (given)."""
        if level not in LEVELS:
            raise ConfigError(f"the interval level must be one of {', '.join(f'{x:.0%}' for x in LEVELS)}, "
                              f"got {level!r}")
        if model_error_rel is not None:
            return cls(model_error_rel, run_spread_rel, GIVEN, level, model_error_rel,
                       model_error_rel, fit_rel)
        return cls(MODEL_ERROR_BY_LEVEL[level], run_spread_rel, MEASURED, level,
                   COARSE_ERROR_BY_LEVEL[level], COARSE_ASYNC_ERROR_BY_LEVEL[level], fit_rel)

    def __post_init__(self):
        check_range(self.model_error_rel, "model error", 0.0, 1.0, hi_open=True, text="in [0, 1) (0 to 100 %)")
        check_range(self.run_spread_rel, "run spread", 0.0, 1.0, hi_open=True, text="a fraction in [0, 1)")
        check_range(self.coarse_error_rel, "coarse model error", 0.0, 1.0, hi_open=True, text="in [0, 1)")
        check_range(self.coarse_async_error_rel, "coarse model error", 0.0, 1.0, hi_open=True, text="in [0, 1)")
        check_range(self.fit_rel, "calibration fit uncertainty", 0.0, 1.0, hi_open=True, text="in [0, 1)")
        check_range(self.profile_rel, "estimated profile's error", 0.0, 10.0, text="in [0, 10]")
        if self.level not in LEVELS:
            raise ConfigError(f"the interval level must be one of {LEVELS}, got {self.level!r}")
        if self.source not in (MEASURED, GIVEN):
            raise ConfigError(f"a margin's source is {MEASURED!r} or {GIVEN!r}, got {self.source!r}")


NO_MARGIN = Margin(0.0, 0.0, GIVEN, coarse_error_rel=0.0, coarse_async_error_rel=0.0)


@dataclass(frozen=True)
class Control:
    """Simulator effort. ``steps_per_worker``/``replications`` None: automatic."""

    seed: int = 0
    warmup_steps: int = 5
    steps_per_worker: int | None = None
    replications: int | None = None
    jitter_cv: float = 0.0
    timeline: bool = False
    margin: Margin = Margin()

    def __post_init__(self):
        check_seed(self.seed)
        if not _whole(self.warmup_steps, 0, MAX_WARMUP):
            raise ConfigError(f"--warmup must be from 0 to {MAX_WARMUP}, got {self.warmup_steps}")
        if self.steps_per_worker is not None and not _whole(self.steps_per_worker, 1, MAX_STEPS):
            raise ConfigError(f"--steps must be from 1 to {MAX_STEPS}, got {self.steps_per_worker}")
        if self.replications is not None and not _whole(self.replications, 1, MAX_REPLICATIONS):
            raise ConfigError(f"--replications must be from 1 to {MAX_REPLICATIONS}, got "
                              f"{self.replications}")
        if self.replications == 1 and self.steps_per_worker == 1:
            raise ConfigError("one run of one step per worker has no interval: give --steps 2 or "
                              "more, or --replications 2 or more")
        check_range(self.jitter_cv, "--jitter", 0.0, MAX_CV, hi_open=True,
                    text="a coefficient of variation in [0, 10)")


def _whole(value, lo: int, hi: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and lo <= value <= hi
