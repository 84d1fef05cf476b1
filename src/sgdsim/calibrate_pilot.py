"""Calibration from a pilot run: measured throughput at a few small worker counts (W = 1, 2, ...).

A one-worker calibration (``calibrate_worker``) sees a worker's step alone: it cannot tell a
cost every worker pays by itself from one the workers share, and only the shared ones grow
with W. A pilot at two or more worker counts can. Two physical parameters are fitted jointly:

- the receiver's CPU per byte α (``parse_alpha_s_per_byte``), paid by each worker on its own:
  fitted so that the smallest pilot count is predicted exactly (its runs are the pilot's
  most numerous and least noisy);
- the link's goodput B, which the workers share: its posterior mode, α refitted at every
  candidate. Each run's squared log-error weighs 1 / v_W, v_W = s_W² + σ²: s_W the sd of one
  run at W that the model predicts at the file's B0 (its replications' spread: an async pair's
  start decides its regime, so one W = 2 run says little), σ the measurement noise (the runs'
  pooled spread at repeated counts, else ``MIN_NOISE_REL``). The file's B0 is a measurement
  too: log B has the prior N(log B0, (τ/S)²), τ the fine model's error for one run
  (``MODEL_ERROR_REL`` / 1.96, measured on lab runs) and S = d log x / d log B at the pilot's
  largest count. So one run moves that count's prediction the fraction τ²/(τ² + v) of the
  way to it: 88 % for a deterministic sync job, about a fifth for an async pair whose runs
  spread ±20 %. Searched over log B in [0.5, 1.25] × B0 on a grid, then by golden section
  around the grid's best point (an async throughput can jump with B: ``_search``). The
  smallest count's errors are zero unless even α = 0 is too slow there, and then they weigh
  against the others'.

The fit's uncertainty: log B is known to sd = 1 / sqrt(Σ s²/v + prior precision), s being
d log x / d log B at each fitted run (α refitted along) and v its variance with σ the runs'
noise after the fit (their pooled spread, else the fit's residual, never below
``MIN_NOISE_REL``). A prediction at W then moves by 1.96 · |d log x(W) / d log B| · sd
(95 %): ``extrapolate``.
An all-reduce pays its link time and receiver CPU alike, per byte of each call: every split
fitted to the smallest count predicts every count the same, so B is not searched and sd is 0
(the other counts' residuals are reported). Elsewhere, a pilot whose runs do not depend on B
while larger counts do is refused.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .calibrate_worker import STEPS, _bisect, calibration_workers, job_keywords
from .sim.stats import t95
from .errors import ConfigError
from .hardware import Hardware
from .predict import predict_with
from .profile.model import Profile
from .spec import ARCHITECTURES
from .spec.control import MODEL_ERROR_REL

MIN_NOISE_REL = 0.02   # a run's throughput is not known better than this (lab repeats: 1-5 %)
REPLICATIONS = 8       # fixed, so that the objective is smooth in B (async points vary by start)
SPAN = (0.5, 1.25)     # B searched within these factors of the hardware file's
GRID_POINTS = 21       # log B on a grid first (3.5 % of B apart over the span) ...
GOLDEN_STEPS = 14      # ... then golden section within the best point's two neighbours (0.01 % of B)
SEARCH_STEPS = GRID_POINTS + GOLDEN_STEPS  # the search's evaluations, as its progress counts them
DELTA = 0.02           # relative step of B for the derivatives
UNIDENTIFIED = 1e-6    # |d log x / d log B| below this: the throughput does not depend on B


@dataclass(frozen=True)
class PilotFit:
    hardware: Hardware
    bandwidth_bps: float
    alpha_s_per_byte: float
    sd_log_bandwidth: float
    noise_rel: float
    residuals_pct: tuple[tuple[int, float], ...]  # (W, predicted / measured − 1 of each run's W mean)


class _Model:
    """Predicted throughput at W for a candidate B, α refitted to the smallest pilot count."""

    def __init__(self, profile: Profile, hw: Hardware, arch: str, mode: str, ps_count, W0: int,
                 x0: float, bucket_size_bytes: float | None = None):
        self.profile, self.hw, self.arch, self.mode, self.ps_count = profile, hw, arch, mode, ps_count
        self.job = job_keywords(bucket_size_bytes)
        self.W0, self.x0 = W0, x0
        self.cache: dict[tuple, tuple[float, float, float]] = {}
        self.alphas: dict[float, float] = {}  # the bisection once per candidate B, not per run

    def throughput(self, W: int, bandwidth_bps: float, alpha: float) -> float:
        return self.point(W, bandwidth_bps, alpha)[0]

    def point(self, W: int, bandwidth_bps: float, alpha: float) -> tuple[float, float, float]:
        """(throughput, low, high): the prediction and its 95 % interval for one run, without
        the model's error (the replications' spread, at least the file's run spread)."""
        key = (W, round(bandwidth_bps, 3), alpha)
        if key not in self.cache:
            kw = self.hw.predict_kwargs(self.arch, self.mode, self.ps_count)
            kw.update(overhead_alpha=alpha, bandwidth=bandwidth_bps, ps_count=self.ps_count,
                      model_error=0.0, **self.job)
            # the larger counts run as long as the prediction the fit feeds will run them (its
            # replications' own length): async pairs under measured TCP dynamics drift with run
            # length (docs/validation/torch-repeats-w2/), and 200 steps put W = 2 3-13 % above it
            reps, steps = (1, STEPS) if W == self.W0 else (REPLICATIONS, None)
            kw.update(arch=self.arch, mode=self.mode, replications=reps, steps=steps)
            pt = predict_with(self.profile, kw, workers=[W])[0]
            self.cache[key] = (float(pt.throughput), float(pt.ci_low), float(pt.ci_high))
        return self.cache[key]

    def alpha(self, bandwidth_bps: float) -> float:
        """α ≥ 0 making W0's prediction equal its measurement (0 if even α = 0 is too slow)."""
        if bandwidth_bps not in self.alphas:
            self.alphas[bandwidth_bps] = self._fit_alpha(bandwidth_bps)
        return self.alphas[bandwidth_bps]

    def _fit_alpha(self, bandwidth_bps: float) -> float:
        def x(a: float) -> float:
            return self.throughput(self.W0, bandwidth_bps, a)
        if x(0.0) <= self.x0:
            return 0.0
        batch = self.profile.job.batch_size * self.W0
        top = batch / self.x0 / max(self.profile.model_bytes(), 1.0)
        return _bisect(lambda a: -x(a), -self.x0, 0.0, top, rising=True)

    def log_x(self, W: int, bandwidth_bps: float) -> float:
        return math.log(self.throughput(W, bandwidth_bps, self.alpha(bandwidth_bps)))

    def run_sd(self, W: int, bandwidth_bps: float) -> float:
        """The sd of log throughput of one run at W, from the predicted 95 % interval."""
        x, lo, hi = self.point(W, bandwidth_bps, self.alpha(bandwidth_bps))
        return (math.log(hi / x) + (math.log(x / lo) if lo > 0 else 0.0)) / 2 / 1.96


def _by_workers(runs) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for W, x in runs:
        if not (isinstance(W, int) and W >= 1 and x > 0 and math.isfinite(x)):
            raise ConfigError(f"a pilot run needs a positive worker count and throughput, got {W}, {x}")
        out.setdefault(W, []).append(float(x))
    if len(out) < 2:
        raise ConfigError("a pilot needs runs at two or more worker counts (e.g. 1 and 2); with one, "
                          "use sgdsim calibrate --throughput")
    return dict(sorted(out.items()))


def _noise(points: dict[int, list[float]], residuals: list[float]) -> float:
    spreads = [np.std(np.log(v), ddof=1) for v in points.values() if len(v) > 1]
    if spreads:
        return max(MIN_NOISE_REL, float(np.sqrt(np.mean(np.square(spreads)))))
    dof = max(1, len(residuals) - 2)  # B and α fitted
    return max(MIN_NOISE_REL, math.sqrt(sum(r * r for r in residuals) / dof))


def _run_spread(points: dict[int, list[float]], default):
    """One more run's 95 % relative half-width from the runs' spread pooled over the worker
    counts run more than once (t quantile of the pooled degrees of freedom); else ``default``."""
    repeated = [np.log(v) for v in points.values() if len(v) > 1]
    dof = sum(len(v) - 1 for v in repeated)
    if not dof:
        return default
    sd = math.sqrt(sum(float(np.sum((v - v.mean()) ** 2)) for v in repeated) / dof)
    n = min(len(v) for v in repeated)
    return min(0.99, t95(dof) * sd * math.sqrt(1 + 1 / n))


def _search(f, lo: float, hi: float, progress) -> float:
    """The minimum of ``f`` over [lo, hi]: the best of a grid, then golden section around it.
    An async point's throughput can jump with B (two workers fall from lock-step into
    interleaving within a few per cent of B), so ``f`` has local minima that golden section
    alone settles into."""
    xs = np.linspace(lo, hi, GRID_POINTS)
    fs = []
    for i, x in enumerate(xs):
        progress(i + 1, SEARCH_STEPS)
        fs.append(f(float(x)))
    i = int(np.argmin(fs))
    a, b = float(xs[max(i - 1, 0)]), float(xs[min(i + 1, GRID_POINTS - 1)])
    return _golden(f, a, b, GOLDEN_STEPS, lambda k, n: progress(GRID_POINTS + k, GRID_POINTS + n))


def _golden(f, lo: float, hi: float, steps: int, progress) -> float:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for i in range(steps):
        progress(i + 1, steps)
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def calibrate_pilot(profile: Profile, runs, hw: Hardware, arch: str, mode: str,
                    ps_count: int | None = None, progress=None,
                    bucket_size_bytes: float | None = None) -> PilotFit:
    """The hardware file fitted to a pilot's runs ``[(workers, examples/s), ...]`` (all-reduce:
    with DDP buckets of ``bucket_size_bytes``, None: one call per layer)."""
    points = _by_workers(runs)
    W0 = next(iter(points))
    if W0 < calibration_workers(arch):  # a lone rank has nothing to all-reduce: no link in its time
        raise ConfigError(f"a pilot of --arch {arch} needs runs at {calibration_workers(arch)} or more "
                          f"workers; drop the W={W0} runs")
    model = _Model(profile, hw, arch, mode, ps_count, W0, float(np.mean(points[W0])), bucket_size_bytes)
    B0 = hw.bandwidth_for(arch)
    # every run counts: α refitted makes W0's exact, except where even α = 0 is too slow there
    joint = [(W, math.log(x)) for W in points for x in points[W]]
    one_cost = ARCHITECTURES[arch].parse_in_call  # B and α are one per-byte cost: nothing to search
    if one_cost:
        b, spread, prior = _ring_bandwidth(model, B0), {}, 0.0
    else:
        spread = {W: model.run_sd(W, B0) for W in points}
        prior, sigma = _prior_precision(model, B0, max(points)), _noise(points, [])
        var = {W: spread[W] ** 2 + sigma ** 2 for W in points}

        def loss(log_b: float) -> float:
            b = math.exp(log_b)
            return sum((model.log_x(W, b) - y) ** 2 / var[W] for W, y in joint) + \
                prior * (log_b - math.log(B0)) ** 2

        b = math.exp(_search(loss, math.log(SPAN[0] * B0), math.log(SPAN[1] * B0),
                             progress or (lambda i, n: None)))
    alpha = model.alpha(b)
    residuals = [model.log_x(W, b) - y for W, y in joint]
    noise = _noise(points, residuals)
    sd = 0.0
    if not one_cost:
        sens = {W: sensitivity(model, W, b) for W in points}  # once a count, not once a run
        runs_sd = [(sens[W], math.hypot(spread[W], noise)) for W, _ in joint]
        sd = _sd_log_bandwidth(model, b, runs_sd, prior, max(points))
    res = tuple((W, 100 * (math.exp(model.log_x(W, b)) / float(np.mean(points[W])) - 1))
                for W in points)
    schedule = {"overlap": profile.job.overlap} if isinstance(profile.job.overlap, bool) else {}
    out = _hardware(hw, arch, b, alpha, points, sd, noise, res, bucket_size_bytes, schedule)
    return PilotFit(out, b, alpha, sd, noise, res)


def _ring_bandwidth(model: _Model, B0: float) -> float:
    """An all-reduce's link time and receiver CPU are both per byte of each call (2(N−1)/N·S),
    so every B with α ≥ 0 fitted to the smallest count predicts every count the same: keep the
    file's B unless even α = 0 is too slow there, then the B at which it fits with α = 0."""
    if model.alpha(B0) > 0 or model.throughput(model.W0, B0, 0.0) >= model.x0:
        return B0
    top = 16 * B0
    if model.throughput(model.W0, top, 0.0) < model.x0:
        raise ConfigError(f"the pilot's {model.W0} ranks ran faster than the profile's computation "
                          "allows: is it the same job and batch size?")
    return _bisect(lambda B: model.throughput(model.W0, B, 0.0), model.x0, B0, top, rising=True)


def _prior_precision(model: _Model, B0: float, top: int) -> float:
    """How well the hardware file's goodput is known before the pilot, as a precision on log
    B: the fine model's error for one run (``MODEL_ERROR_REL``, 95 %, measured on lab runs)
    is what B0 may be off by at the pilot's largest count, d log x / d log B there converting
    it (0 where that count does not depend on B)."""
    s = sensitivity(model, top, B0)
    return (s / (MODEL_ERROR_REL / 1.96)) ** 2 if abs(s) >= UNIDENTIFIED else 0.0


def _sd_log_bandwidth(model: _Model, b: float, runs: list[tuple[float, float]], prior: float,
                      top: int) -> float:
    """sd of log B from each run's (d log x / d log B, sd of its log) and the prior's
    precision; 0 where no pilot run and no larger count depends on B (with α refitted).
    Where the pilot does not pin B but larger worker counts depend on it, the pilot cannot be
    extrapolated: one line says so."""
    norm = math.sqrt(sum(s * s for s, _ in runs))
    if norm >= UNIDENTIFIED:
        return 1 / math.sqrt(sum((s / sd) ** 2 for s, sd in runs) + prior)
    ahead = max(abs(sensitivity(model, W, b)) for W in (2 * top, 4 * top))
    if ahead < UNIDENTIFIED:
        return 0.0
    raise ConfigError(f"the pilot's worker counts do not pin the link's goodput, which "
                      f"{4 * top} workers depend on: add runs at a larger worker count")


def sensitivity(model: _Model, W: int, b: float) -> float:
    """d log x(W) / d log B, α refitted along (central difference)."""
    up, down = b * (1 + DELTA), b * (1 - DELTA)
    return (model.log_x(W, up) - model.log_x(W, down)) / (math.log(up) - math.log(down))


def extrapolate(fit: PilotFit, profile: Profile, hw: Hardware, arch: str, mode: str,
                workers, ps_count: int | None = None,
                bucket_size_bytes: float | None = None) -> list[tuple[int, float, float]]:
    """(W, predicted examples/s, the fit's 95 % relative uncertainty there) for each W."""
    points = fit.hardware.measured["calibration"]["pilot"]
    W0 = min(int(w) for w in points)
    x0 = float(np.mean(points[str(W0)]))
    model = _Model(profile, hw, arch, mode, ps_count, W0, x0, bucket_size_bytes)
    return [(W, math.exp(model.log_x(W, fit.bandwidth_bps)),
             1.96 * abs(sensitivity(model, W, fit.bandwidth_bps)) * fit.sd_log_bandwidth)
            for W in workers]


def _hardware(hw: Hardware, arch: str, b: float, alpha: float, points, sd: float, noise: float,
              residuals, bucket_size_bytes: float | None, schedule: dict | None = None) -> Hardware:
    """``schedule``: whether the pilot's transfers overlapped the step (``predict`` warns
    when a prediction runs the other schedule)."""
    record = {"pilot": {str(W): v for W, v in points.items()}, "arch": arch,
              **({"bucket_size_bytes": bucket_size_bytes} if bucket_size_bytes is not None else {}),
              **(schedule or {}),
              "fitted_bandwidth_bps": b, "fitted_alpha_s_per_byte": alpha,
              "sd_log_bandwidth": sd, "noise_rel": noise,
              "residuals_pct": [[W, r] for W, r in residuals]}
    key = ("allreduce_bandwidth_bps" if "collective" in ARCHITECTURES[arch].options
           else "bandwidth_bps")
    spread = _run_spread(points, hw.run_spread_rel)
    return dataclasses.replace(hw, **{key: b}, parse_alpha_s_per_byte=alpha, run_spread_rel=spread,
                               measured={**hw.measured, "calibration": record})
