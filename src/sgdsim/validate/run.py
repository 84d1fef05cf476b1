"""``run_validation``: profile, predict with every model, measure in the lab, compare.

The three steps that need torch or root are injectable (tests pass fakes):

- ``profile_fn(case) -> Profile`` (or anything with ``.profile``): one worker, once per case;
- ``lab_fn(case) -> context manager``: one emulated cluster per case, sized for its largest
  worker count and reused for every worker count;
- ``measure_fn(case, workers, lab) -> float`` (or anything with ``.throughput``): examples/s.

Predictions for every case are made before the lab is touched, so a case the models cannot
handle fails in seconds, not after an hour of measurements. What was measured is on disk after
every point, and ``resume=True`` continues a stopped run (``resume``).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
from dataclasses import dataclass, field

from ..analytic.coarse_profile import CoarseProfile, to_profile
from ..analytic.models import MODELS, unsupported
from ..progress import say
from ..errors import ConfigError
from ..parse.keywords import specs as keywords_specs
from ..spec import Control, Strategy
from ..predict import predict_with
from ..profile.model import Profile
from .grid import Case, Grid
from .report import measured_runs
from .resume import finished_runs, keeping_finished, saved_profiles


@dataclass(frozen=True)
class Point:
    """One (case, model, worker count): throughputs in examples/s, error = predicted/measured − 1."""

    case: str
    model: str
    workers: int
    predicted: float
    measured: float | None = None
    low: float | None = None    # the simulator's 95 % interval, no model-error margin; None: a point value
    high: float | None = None
    fitted: bool = False        # the calibration point: a fit, not a check (left out of errors)

    @property
    def covered(self) -> bool | None:
        """Does the interval contain the measurement? None without both."""
        if self.measured is None or self.low is None or self.high is None:
            return None
        return self.low <= self.measured <= self.high

    @property
    def error_pct(self) -> float | None:
        if self.measured is None or not self.measured > 0:
            return None
        return 100.0 * (self.predicted / self.measured - 1.0)


@dataclass
class CaseResult:
    case: Case
    points: list[Point]
    skipped: list[str] = field(default_factory=list)
    measured_runs: dict[int, list[float]] = field(default_factory=dict)  # examples/s per lab run
    profile: object = None           # what the predictions used
    calibration: dict = field(default_factory=dict)  # the fit, when the case calibrates

    @property
    def measured(self) -> dict[int, float]:
        """The measurement per worker count: the mean of its runs."""
        return {w: sum(runs) / len(runs) for w, runs in self.measured_runs.items() if runs}


@dataclass
class ValidationResult:
    grid: Grid
    cases: list[CaseResult]
    dry_run: bool
    files: list[str]

    @property
    def points(self) -> list[Point]:
        return [p for c in self.cases for p in c.points]


def parse_models(spec: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``"all"`` or ``"fine,coarse"`` -> model names, in the order of ``MODELS``."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return MODELS
    for n in names:
        if n not in MODELS:
            raise ConfigError(f"unknown model {n!r} in --models (choose from {', '.join(MODELS)}, all)")
    if not names:
        raise ConfigError("--models names no model")
    return tuple(m for m in MODELS if m in names)


def run_validation(grid: Grid, outdir: str = "validation-out", *, models=MODELS,
                   dry_run: bool = False, force: bool = False, resume: bool = False,
                   profile_fn=None, measure_fn=None, lab_fn=None, log=None) -> ValidationResult:
    """Run every case of ``grid`` and write the outputs (``report.output_files``) to ``outdir``,
    points.csv and the summary after every point; a failing point raises ``PointFailed`` once
    the finished ones are written. ``resume``: keep the points an earlier run of the same grid
    wrote to ``outdir``, and its profiles, and measure the rest."""
    from . import report

    log = log or say  # one line per case and measurement; silent under --quiet
    models = parse_models(models)
    targets = report.output_files(outdir, grid.cases)
    # before any work: a refusal costs nothing
    kept = finished_runs(grid, targets, force=force, dry_run=dry_run) if resume else None
    if not resume:
        report.check_targets(targets, force)
    _check_matplotlib()
    if kept is not None:
        profile_fn = profile_fn or saved_profiles(os.path.join(outdir, "profiles"), default_profile)
    profile_fn, measure_fn = profile_fn or default_profile, measure_fn or default_measure
    results = [_predict_case(case, profile_fn, models, outdir, log) for case in grid.cases]
    result = ValidationResult(grid=grid, cases=results, dry_run=dry_run, files=list(targets))
    if not dry_run:
        _restore(results, kept or {}, log)
        report.write_progress(result, outdir)  # the grid's fingerprint, before the lab
        for cr in results:
            with keeping_finished(result, outdir, cr, log):
                _measure_case(cr, measure_fn, lab_fn or default_lab, log,
                              lambda: report.write_progress(result, outdir))
                if cr.case.calibrate:
                    _calibrate_case(cr, models, log)
            report.write_plot(cr, os.path.join(outdir, "plots", f"{cr.case.name}.png"))
    report.write_all(result, outdir, case_plots=dry_run)  # a measured case's is drawn above
    return result


def _restore(results: list[CaseResult], kept: dict, log) -> None:
    """Put back the runs of the points an earlier run finished (``--resume``)."""
    for cr in results:
        cr.measured_runs.update({w: kept[(cr.case.name, w)] for w in cr.case.workers
                                 if (cr.case.name, w) in kept})
        if cr.measured_runs:
            log(f"[{cr.case.name}] kept {_workers_text(sorted(cr.measured_runs))} worker(s), "
                "measured before")
            _set_measured(cr)


def _predict_case(case: Case, profile_fn, models, outdir: str, log) -> CaseResult:
    log(f"[{case.name}] {case.describe()}")
    log(f"[{case.name}] profiling one worker" + (f" (from {case.profile})" if case.profile else ""))
    profile = profile_fn(case)
    profile = getattr(profile, "profile", profile)
    report_profile(profile, os.path.join(outdir, "profiles", f"{case.name}.json"))
    points, skipped = predict_case(case, profile, models)
    for why in skipped:
        log(f"[{case.name}] note: {why}; skipped")
    return CaseResult(case=case, points=points, skipped=skipped, profile=profile)


def predict_case(case: Case, profile, models=MODELS) -> tuple[list[Point], list[str]]:
    """Every model's prediction at every worker count; models that cannot honour the case's
    options are left out, with the reason."""
    net = case.network()
    strategy = Strategy(arch=case.arch, mode=case.mode, sharing=case.sharing,
                        ps_count=case.ps_count if case.ps_count > 1 else None)
    n_ps = max(getattr(profile, "ps_count", 1), case.ps_count)
    points, skipped = [], []
    for name in models:
        reason = unsupported(name, strategy, keywords_specs(bandwidth=net["bandwidth"])[1], Control(), n_ps)
        if reason:
            skipped.append(reason)
            continue
        # the simulator's own interval: the margin is fitted to, and checked on, runs against it
        kw = {**net, "model_error": 0.0, "fit_uncertainty": 0.0, "mode": case.mode, "arch": case.arch,
              "sharing": case.sharing, "replications": case.replications if name == "fine" else 1}
        preds = predict_with(profile, kw, workers=list(case.workers), model=name)
        points += [Point(case.name, name, p.workers, float(p.throughput),
                         low=float(p.ci_low) if name == "fine" else None,
                         high=float(p.ci_high) if name == "fine" else None) for p in preds]
    return points, skipped


def _measure_case(cr: CaseResult, measure_fn, lab_fn, log, saved) -> None:
    """Measure the case's points not measured yet, in one lab; ``saved()`` after each."""
    case = cr.case
    todo = [w for w in case.workers if w not in cr.measured_runs]
    if not todo:
        return  # kept from an earlier run: no lab to bring up
    with lab_fn(case) as lab:
        for w in todo:
            count = getattr(measure_fn, "runs", None)  # a replay has its own number of runs
            n = count(case, w) if count else case.repeats
            runs: list[float] = []
            for r in range(n):
                verb = "replaying" if getattr(measure_fn, "replay", False) else "measuring"
                log(f"[{case.name}] {verb} {w} worker(s){_nth(r, n)}: "
                    f"{case.warmup_s:g} s warm-up + {case.duration_s - case.warmup_s:g} s")
                runs.append(examples_per_s(measure_fn(case, w, lab)))
                log(f"[{case.name}]   {runs[-1]:.2f} examples/s")
            cr.measured_runs[w] = runs  # a point is kept whole: one cut short is measured again
            _set_measured(cr)
            saved()


def _set_measured(cr: CaseResult) -> None:
    measured = cr.measured
    cr.points = [dataclasses.replace(p, measured=measured.get(p.workers)) for p in cr.points]


def examples_per_s(got) -> float:
    """A measurement's examples/s: a lab run's (``TrainResult``) or a plain number."""
    # step-completion intervals avoid the ±1 step rounding of a count in a short window
    return float(getattr(got, "throughput_intervals", None) or getattr(got, "throughput", got))


def _calibrate_case(cr: CaseResult, models, log) -> None:
    """Fit the hardware to the measured calibration point, then predict the case again with it
    (``sgdsim calibrate``); the calibration point itself is no longer a held-out check."""
    from ..calibrate_worker import summary

    case = cr.case
    if case.pilot:
        fitted, hw = case.pilot, pilot_hardware(case, cr.profile, cr.measured_runs)
        text = (f"receiver CPU {hw.parse_alpha_s_per_byte * 1e9:.3g} ns/byte, goodput "
                f"{hw.bandwidth_for(case.arch) / 1e6:.4g} Mbit/s")
    else:
        W0, hw = calibrated_hardware(case, cr.profile, cr.measured_runs)
        fitted, text = (W0,), summary(hw, case.arch)
    cr.calibration = {"workers": fitted[0] if len(fitted) == 1 else list(fitted),
                      "parse_alpha_s_per_byte": hw.parse_alpha_s_per_byte,
                      "bandwidth_bps": hw.bandwidth_for(case.arch), **hw.measured["calibration"]}
    log(f"[{case.name}] calibrated on {_workers_text(fitted)} worker(s): {text}; predicting again")
    points, _ = predict_case(dataclasses.replace(case, hardware_spec=hw, predict_bandwidth_bps=None),
                             cr.profile, models)
    runs = cr.measured
    cr.points = [dataclasses.replace(p, measured=runs.get(p.workers), fitted=p.workers in fitted)
                 for p in points]


def _workers_text(ws) -> str:
    return ", ".join(str(w) for w in ws)


def pilot_hardware(case: Case, profile, runs: dict[int, list[float]]):
    """The case's hardware fitted jointly to its measured pilot worker counts' runs."""
    from ..calibrate_pilot import calibrate_pilot

    prof = profile if isinstance(profile, Profile) else to_profile(profile)
    pilot = [(w, x) for w in case.pilot for x in runs[w]]
    return calibrate_pilot(prof, pilot, case.model_hardware(), case.arch, case.mode,
                           case.ps_count if case.ps_count > 1 else None,
                           bucket_size_bytes=case.bucket_size_bytes).hardware


def calibrated_hardware(case: Case, profile, runs: dict[int, list[float]]):
    """(W0, the case's hardware fitted to its measured W0-worker runs, examples/s each)."""
    from ..calibrate_worker import calibrate, calibration_workers

    W0 = calibration_workers(case.arch)
    prof = profile if isinstance(profile, Profile) else to_profile(profile)
    # the runs' spread counts too; a run's examples/s are those of all W0 workers (ranks)
    steps = [W0 * prof.job.batch_size / x for x in runs[W0]]
    return W0, calibrate(prof, steps, case.model_hardware(), case.arch, case.mode,
                         case.ps_count if case.ps_count > 1 else None, case.bucket_size_bytes)


def measured_from_csv(paths, grid: Grid):
    """``measure_fn`` and ``lab_fn`` that replay the runs of earlier ``points.csv`` files (one
    path or several, their runs pooled in order), so the models can be compared again without
    the lab. Every (case, workers) the grid needs must have at least ``repeats`` runs; all of
    them are replayed (a point measured again later has more)."""
    import contextlib

    paths = [paths] if isinstance(paths, str) else list(paths)
    runs = pooled_runs(paths)
    for case in grid.cases:
        for w in case.workers:
            got = runs.get((case.name, w), [])
            if len(got) < case.repeats:
                raise ConfigError(f"{', '.join(paths)}: case "
                                  f"{case.name!r} has {len(got)} measured run(s) at {w} worker(s), "
                                  f"the grid wants {case.repeats}")
    queues = {k: list(v) for k, v in runs.items()}

    def measure(case, workers, lab):
        return queues[(case.name, workers)].pop(0)

    measure.replay = True  # type: ignore[attr-defined]  # the log says "replaying"
    measure.runs = lambda case, w: len(runs[(case.name, w)])  # type: ignore[attr-defined]
    return measure, lambda case: contextlib.nullcontext(None)


def pooled_runs(paths: list[str]) -> dict[tuple[str, int], list[float]]:
    """The runs of several ``points.csv`` files, per (case, workers), in the files' order. A
    file whose runs of a point are already among the earlier files' is refused: pooled twice,
    its runs would count twice."""
    pooled: dict[tuple[str, int], list[float]] = {}
    for path in paths:
        for key, got in measured_runs(path).items():
            have = pooled.setdefault(key, [])
            if set(got) & set(have):
                raise ConfigError(f"{path}: its runs of case {key[0]!r} at {key[1]} worker(s) are "
                                  f"already in an earlier --measured file; give each run once")
            have += got
    return pooled


def _nth(r: int, repeats: int) -> str:
    return f", run {r + 1}/{repeats}" if repeats > 1 else ""


def report_profile(profile, path: str) -> None:
    """Save the profile the predictions used, so they can be redone without profiling."""
    from ..profile.io import save_profile

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fine = to_profile(profile) if isinstance(profile, CoarseProfile) else profile
    if isinstance(fine, Profile):
        save_profile(fine, path, overwrite=True)  # check_targets has vetted the path


# ----------------------------------------------------------------------------- defaults

def default_profile(case: Case):
    """A saved ``profile`` if the case names one; else ``lab:`` models through the lab's own
    profiler, anything else through ``sgdsim.profiler.profile_model``."""
    if case.profile:
        from ..profile.io import load_profile

        return load_profile(case.profile)
    from ..lab.train.timing import standalone_profile

    return standalone_profile(case.model, case.batch_size, case.overlap, steps=case.profile_steps)


def default_lab(case: Case):
    """One lab for the case: its largest worker count plus a host per PS (``arch=ps``; a spare
    for all-reduce). Needs root."""
    from ..lab.cluster import LabCluster
    from ..lab.train.runner import lab_hosts

    return LabCluster(hosts=lab_hosts(max(case.workers), case.arch, case.ps_count),
                      bandwidth_bps=case.bandwidth_bps)


def default_measure(case: Case, workers: int, lab):
    from ..lab.train import run_training

    return run_training(case.model, workers, case.batch_size, case.bandwidth_bps,
                        arch=case.arch, mode=case.mode, overlap=case.overlap,
                        duration_s=case.duration_s, warmup_s=case.warmup_s, lab=lab,
                        ps_count=case.ps_count, trainer=case.trainer)


def _check_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("sgdsim validate draws its plots with matplotlib: pip install matplotlib "
                          "(or pip install -e '.[plot]')")

