"""A profile for hardware you do not have: the traced step (``graph``) timed from the operator
database (exact hits) and the estimator (misses), with provenance.

The database is read once: one lookup of every distinct call, one load of the estimators.
A type with neither gets the device's roofline (``roofline.py``), fitted from what the device
measured, and the provenance states that roofline's measured error.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from .collect import call_dtype
from .estimator.features import unseen_modes
from .estimator.terms import StaleTerms, unfitted_calls
from .optypes import OTHER_NAME, classify
from .records import params_key
from .roofline import CAST, Roofline, cast_types, cast_work, fit_roofline, work_of
from .step_factor import StepFactor, applies_by_default, device_factor, precision_key


@dataclass
class Timed:
    """Per call: forward and backward seconds, and where they came from."""

    fwd: np.ndarray
    bwd: np.ndarray
    # "measured" (exact hit), "estimated", "roofline" (a type with neither), "cast" (autocast's
    # casts not measured: ``_casts``), "fallback" (an untyped call: its function's median) or
    # "unknown" (0 s)
    source: list[str]
    roofline_types: dict[str, int] = field(default_factory=dict)  # type -> calls, if any
    # dtype -> those types in it: the grids to measure (autocast's are of both types)
    roofline_grids: dict[str, set] = field(default_factory=dict)
    roofline: Roofline | None = None  # the fit those calls were timed by
    # per operator type, values outside its estimator's training (a mode never seen,
    # "groups=32", or a size above the largest): those estimates are guesses; the user is told
    unseen: dict[str, list[str]] = field(default_factory=dict)
    ops: list[str] = field(default_factory=list)  # each call's operator type
    casts_by_roofline: int = 0  # casts priced by the roofline (no ReLU estimator in a type)

    def fraction(self, source: str) -> float:
        total = float((self.fwd + self.bwd).sum())
        mask = np.array([s == source for s in self.source])
        return float((self.fwd + self.bwd)[mask].sum() / total) if total > 0 else 0.0


def time_calls(calls, db, device: str, estimators: dict, fit: Roofline | None = None) -> Timed:
    """``calls``: traced Calls. ``estimators``: {(op, dtype): OpEstimator} for ``device``.
    ``fit``: the device's roofline if already fitted (else fitted here, only if needed)."""
    calls = list(calls)
    keyed = [(*classify(c), call_dtype(c)) for c in calls]
    keys = [(op, params_key(p), dt) for op, p, dt in keyed]
    hits = db.lookup(device, set(keys))
    fwd, bwd = np.zeros(len(keyed)), np.zeros(len(keyed))
    source = ["measured"] * len(keyed)
    misses: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (op, _, dt) in enumerate(keyed):
        rec = hits.get(keys[i])
        if rec is not None:  # a bound (too short to resolve): the middle of [0, bound]
            fwd[i] = rec.fwd_s / (2 if rec.fwd_bound else 1)
            bwd[i] = rec.bwd_s / (2 if rec.bwd_bound else 1)
        else:
            misses[(op, dt)].append(i)
    neither: list[int] = []
    casts: list[int] = []
    unseen: dict[str, list[str]] = {}
    for (op, dt), idx in misses.items():
        est = estimators.get((op, dt))
        if est is not None:
            params = [keyed[i][1] for i in idx]
            guesses = unseen_modes(params, est.layout)
            if est.prior is not None and "terms" in est.prior:
                if n := unfitted_calls(op, dt, params, est.prior):
                    guesses.insert(0, f"{n} call(s) with a term too few grid rows had for a rate")
            if guesses:
                unseen[op] = guesses
            try:
                f, b = est.predict(params)
            except StaleTerms as exc:
                raise ConfigError(f"{exc.what}: train it again: sgdsim ops train --db "
                                  f"{getattr(db, 'shown', 'DB')}") from None
            fwd[idx], bwd[idx] = f, b
            for i in idx:
                source[i] = "estimated"
        elif op == OTHER_NAME:  # a cast's cost is its bytes, not a view's median
            casts += [i for i in idx if calls[i].func == CAST]
            _fallback([i for i in idx if calls[i].func != CAST], keyed, db, device, (fwd, bwd, source))
        else:
            neither += idx
    timed = Timed(fwd, bwd, source, unseen=unseen, ops=[op for op, _, _ in keyed])
    if neither:
        _roofline(calls, keyed, sorted(neither), db, device, fit, timed)
    if casts:
        timed.roofline = timed.roofline or fit
        _casts(calls, sorted(casts), estimators, db, device, timed)
    return timed


# a ReLU's backward reads two tensors (its input, the gradient) and writes one; a cast's
# backward, a cast back, reads one and writes one
CAST_BACKWARD_SHARE = 2.0 / 3.0


def _casts(calls, idx, estimators, db, device, timed: Timed) -> None:
    """Casts not measured as such (autocast's: each weight every step, gradients back), as
    the mean of a ReLU over the same elements in each of the cast's two types: a ReLU reads
    and writes its elements, so the mean of the two moves what the cast moves, and is timed
    as a memory-bound call on this device is. Backward, ``CAST_BACKWARD_SHARE`` of theirs.
    Against the casts measured exactly in ResNet-50's, BERT's and GPT-2's autocast steps, the
    sum by this rule is 0.94-1.01x theirs; for the MLP's casts of a few thousand elements,
    0.69-0.87x (docs/ops-runs.md, runs 59 and 60). Without ReLU estimators in both types:
    the roofline of its bytes."""
    for i in idx:
        c = calls[i]
        pair = [estimators.get(("relu", d)) for d in cast_types(c)]
        if None in pair:
            timed.roofline = timed.roofline or fit_roofline(db, device, getattr(db, "shown", "DB"))
            timed.fwd[i], timed.bwd[i] = timed.roofline.times_s(cast_work(c))
            timed.casts_by_roofline += 1
        else:
            p = [{"numel": sum(t.numel for t in c.tensors()), "gi": int(c.needs_grad)}]
            f, b = zip(*(e.predict(p) for e in pair))
            timed.fwd[i] = (f[0][0] + f[1][0]) / 2
            timed.bwd[i] = (b[0][0] + b[1][0]) / 2 * CAST_BACKWARD_SHARE if c.needs_grad else 0.0
        timed.source[i] = "cast"


def _roofline(calls, keyed, idx, db, device, fit, timed: Timed) -> None:
    """Calls of a type with neither a measurement nor an estimator: the device's roofline."""
    types: dict[str, int] = defaultdict(int)
    for i in idx:
        types[keyed[i][0]] += 1
    if fit is None:
        what = ", ".join(f"{n} {op}" for op, n in sorted(types.items()))
        try:
            fit = fit_roofline(db, device, getattr(db, "shown", "DB"))
        except ConfigError as exc:  # say which calls needed it
            raise ConfigError(f"no measurement and no trained estimator for {what} call(s), "
                              f"and {exc}") from None
    for i in idx:
        timed.fwd[i], timed.bwd[i] = fit.times_s(work_of(calls[i], keyed[i][0], keyed[i][1]))
        timed.source[i] = "roofline"
        timed.roofline_grids.setdefault(keyed[i][2], set()).add(keyed[i][0])
    timed.roofline_types, timed.roofline = dict(types), fit


def _fallback(idx, keyed, db, device, out) -> None:
    """Untyped calls without an estimator (views, small copies): the median measured untyped
    call of the same function on this device, else of any function; 0 if none was measured."""
    fwd, bwd, source = out
    rows = db.load(device=device, op=OTHER_NAME)
    by_fn: dict[str, list] = defaultdict(list)
    for r in rows:
        by_fn[str(r.params.get("fn"))].append((r.fwd_s, r.bwd_s))
    everything = [v for vs in by_fn.values() for v in vs]
    for i in idx:
        pool = by_fn.get(str(keyed[i][1].get("fn"))) or everything
        if pool:
            fwd[i], bwd[i] = np.median(np.array(pool), axis=0)
            source[i] = "fallback"
        else:
            source[i] = "unknown"  # nothing measured to go by: counted as 0 s, and reported


def load_estimators(db, device: str) -> dict:
    texts = db.load_estimators(device)
    if not texts:
        return {}
    from .estimator.ensemble import estimator_from_json

    return {key: estimator_from_json(text) for key, text in texts.items()}


def estimate_profile(spec: str, batch_size: int, db, device: str, overlap: bool = True,
                     dtype: str = "float32", step_factor: bool | StepFactor | None = None,
                     autocast: str | None = None):
    """The profile ``sgdsim profile SPEC`` would write on ``device``, without running there;
    its floating-point calls in ``dtype`` (traced in float32, then converted), or, with
    ``autocast``, each in the precision torch.autocast gives it (traced so). Every time is
    scaled by ``step_factor``: True, the device's from its timed steps (``step_factor.py``;
    none timed: 1); False, not scaled; None (the default), True under autocast and False in
    float32 (``step_factor.applies_by_default``: runs 30, 60 and 62); or a given factor."""
    from ..profile.model import Job
    from ..profiler.build import build_profile
    from ..profiler.precision import check_autocast
    from ..profiler.runner import _summarise
    from .graph import layer_times, trace_model

    check_autocast(autocast, dtype)
    step = trace_model(spec, batch_size, autocast, _kind(db, device) if autocast else "cpu")
    estimators = load_estimators(db, device)
    if step_factor is None:
        step_factor = applies_by_default(autocast)
    if step_factor is True:
        step_factor = device_factor(db, device, precision_key(dtype, autocast))
    scale = step_factor.factor if step_factor else 1.0

    def typed(calls):
        return [c.in_dtype(dtype) for c in calls] if dtype != "float32" else list(calls)
    timed = time_calls(typed(step.calls), db, device, estimators)
    fwd = layer_times(step, list(timed.fwd))
    bwd = layer_times(step, list(timed.bwd))
    upd = _update_times(step, typed, (db, device, estimators), timed, len(fwd))
    fwd, bwd, upd = ([t * scale for t in ts] for ts in (fwd, bwd, upd))
    total = sum(fwd) + sum(bwd)
    measured = _summarise(step.work, step.rec, step.discovered, ([fwd], [bwd], [upd]),
                          [total], [total])
    job = Job(model=step.work.name, batch_size=batch_size, framework="estimated", device=device,
              overlap=overlap, source=f"sgdsim profile {spec} --estimate"
              + (f" --dtype {dtype}" if dtype != "float32" else "")
              + (f" --autocast {autocast}" if autocast else ""))
    info = _provenance(spec, device, step, timed, estimators)
    extra = {"estimated": info | {"dtype": dtype, "autocast": autocast, **_scaled(info, step_factor)}}
    return build_profile(measured, job, overlap, extra)


def _update_times(step, typed, where, timed: Timed, layers: int) -> list[float]:
    """Each layer's optimizer calls, timed; the types the roofline stood in for among them are
    named with the step's (``timed``)."""
    db, device, estimators = where
    upd = [0.0] * layers
    flat = [(idx, c) for idx, cs in step.update_calls().items() for c in cs]
    if not flat:
        return upd
    timed_upd = time_calls(typed(c for _, c in flat), db, device, estimators, timed.roofline)
    for (idx, _), f in zip(flat, timed_upd.fwd):
        upd[idx] += float(f)
    for op, n in timed_upd.roofline_types.items():
        timed.roofline_types[op] = timed.roofline_types.get(op, 0) + n
    for dt, ops in timed_upd.roofline_grids.items():
        timed.roofline_grids.setdefault(dt, set()).update(ops)
    timed.roofline = timed.roofline or timed_upd.roofline
    return upd


def _kind(db, device: str) -> str:
    """The device type a traced step's tensors live on (autocast's rules are per type)."""
    return next((d.kind for d in db.devices() if d.name == device), "cpu")


def _scaled(info: dict, factor: StepFactor | None) -> dict:
    """The step factor's part of the provenance; its spread joins the step's error in
    quadrature (the calls' errors and how far a model strays from its device's factor are
    unrelated)."""
    if not factor:
        return {"step_factor": None}
    return {"step_factor": factor.as_dict(),
            "step_error_rel": float(np.hypot(info["step_error_rel"], factor.spread_rel)),
            "forward_s": info["forward_s"] * factor.factor, "backward_s": info["backward_s"] * factor.factor}


def _provenance(spec, device, step, timed: Timed, estimators) -> dict:
    counts: dict[str, int] = defaultdict(int)
    for s in timed.source:
        counts[s] += 1
    return {"spec": spec, "device": device, "calls": len(timed.source),
            "calls_by_source": dict(counts),
            "time_fraction_measured": timed.fraction("measured"),
            "time_fraction_estimated": timed.fraction("estimated"),
            "time_fraction_fallback": timed.fraction("fallback"),
            "time_fraction_roofline": timed.fraction("roofline"),
            "time_fraction_cast": timed.fraction("cast"),
            "casts_by_roofline": timed.casts_by_roofline,
            # types with neither a measurement nor an estimator (calls, optimizer's included),
            # and the roofline that timed them, with its error on this device's measured rows
            "roofline_types": dict(sorted(timed.roofline_types.items())),
            "roofline_grids": {dt: sorted(ops) for dt, ops in sorted(timed.roofline_grids.items())},
            "roofline": timed.roofline.as_dict() if timed.roofline else None,
            "estimators": sorted(f"{op}/{dt}" for op, dt in estimators),
            "step_error_rel": step_error_rel(timed, estimators),
            "outside_training": timed.unseen,
            "forward_s": float(timed.fwd.sum()), "backward_s": float(timed.bwd.sum())}


FALLBACK_ERROR_REL = 0.5  # an untyped call timed by its function's median: a stated guess


def step_error_rel(timed: Timed, estimators: dict) -> float:
    """How far the estimated step may be off, time-weighted over its calls: 0 for an exact
    row, the estimator's own validation error for an estimate, the roofline's median error
    for a roofline time (a cast's: the ReLU estimator's, ``_casts``), ``FALLBACK_ERROR_REL``
    for an untyped call's median. A linear average (errors of one type are alike, not
    independent, so they are not let cancel)."""
    by_type = {op: est.stats.get("validation_error", 0.0) for (op, _), est in estimators.items()}
    roof = timed.roofline.error["fwd"]["median"] if timed.roofline and timed.roofline.error else None
    roof = 1.0 if roof is None else roof
    # a cast priced as a ReLU errs as the ReLU estimator does; by the roofline, as the roofline
    cast = by_type.get("relu", roof) if timed.casts_by_roofline == 0 else roof
    per_source = {"roofline": roof, "cast": cast, "fallback": FALLBACK_ERROR_REL}

    def error(source: str, op: str) -> float:  # measured and unknown (0 s) calls: 0
        return by_type.get(op, 0.0) if source == "estimated" else per_source.get(source, 0.0)

    times = timed.fwd + timed.bwd
    total = float(times.sum())
    if total <= 0:
        return 0.0
    return float(sum(t * error(s, op) for t, s, op in zip(times, timed.source, timed.ops)) / total)


def pick_target(db, target: str | None, threads: int | None) -> str:
    """The device to estimate for: a name in the database, 'this-cpu', or its only device."""
    names = [d.name for d in db.devices()]
    if target == "this-cpu":
        from .collect import this_device

        target = this_device(threads or 1).name
    elif target is None:
        if len(names) != 1:
            raise ConfigError(f"the database has {len(names)} devices: name one with --target "
                              f"({'; '.join(names) or 'none measured yet'})")
        return names[0]
    if target not in names:
        raise ConfigError(f"no device {target!r} in the database (has: "
                          f"{'; '.join(names) or 'none'}); measure it with sgdsim ops measure")
    return target
