"""``OpEstimator``: the trained estimator of one operator type and dtype; ``train``,
``evaluate`` and ``holdout_split``.

Prediction is plain numpy (the stored weights of the MLP), so a shared model needs neither
scikit-learn nor pickle: it travels as JSON text, in the operator database next to the
measurements, and loading it runs no code. One MLP predicts log forward and log backward time
(two outputs). A backward of 0 s (no input needs a gradient) is not learned as a time: if every
row has one, the model has no backward output; if a mode value always has one (``gi=0``), the
model predicts 0 there; any other zero backward is learned as the smallest backward seen.
"""
from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError
from .features import (Layout, bounded_inputs, layout_of, log_inputs, n_pairwise, one_hot,
                       pairwise, pc_text)
from ..records import learnable
from .evaluation import evaluate
from .prior import check_prior, fit_prior, held_out_times, prior_times
from .terms import has_terms
from .zero_backward import zero_bwd_modes
from .search import (QUADRATIC, Fitter, choose_pc, fine_tune, forward_median, output_errors, screen,
                     search_arch)

FORMAT = "sgdsim-op-estimator/1"
VALIDATION = 0.2  # share of the training rows that scores the searches
MIN_ROWS = 10
VOLATILE = ("train_s",)  # stats of one run on one machine: not part of the model's JSON


@dataclass
class OpEstimator:
    op: str
    dtype: str
    layout: Layout
    pc: tuple[int, ...] | None  # exponents of the principal component; None: no PC
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: np.ndarray
    y_std: np.ndarray
    weights: list[np.ndarray]
    biases: list[np.ndarray]
    has_bwd: bool
    zero_bwd: tuple[tuple[str, str], ...] = ()  # mode values whose backward is always 0
    stats: dict = field(default_factory=dict)
    # a roofline the MLP corrects (``prior.py``): the MLP learns log(time / prior); None: time
    prior: dict | None = None
    # the correction is a quadratic in the log inputs (held at the grid's edges), not a network
    quadratic: bool = False

    def predict(self, params: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """Forward and backward seconds, one each per parameter dict."""
        if not params:
            return np.zeros(0), np.zeros(0)
        self._check_names(params)
        held = self.quadratic or self.prior is not None  # a correction holds still beyond the grid
        x = (encode(params, self.layout, self.pc, self.quadratic, held) - self.x_mean) / self.x_std
        y = np.exp(forward(x, self.weights, self.biases) * self.y_std + self.y_mean)
        if self.prior is not None:
            y = y * prior_times(self.op, self.dtype, params, self.prior)[:, :y.shape[1]]
        bwd = y[:, 1] if self.has_bwd else np.zeros(len(params))
        zero = [any(str(p[m]) == v for m, v in self.zero_bwd) for p in params]
        return y[:, 0], np.where(zero, 0.0, bwd)

    def _check_names(self, params: list[dict]) -> None:
        names = self.layout.names
        for p in params:
            if set(p) != names:
                missing, extra = sorted(names - set(p)), sorted(set(p) - names)
                raise ConfigError(f"{self.op} estimator: parameters do not match its training "
                                  f"(missing {missing or 'none'}, unknown {extra or 'none'})")
            bad = [k for k in self.layout.numeric if not _is_number(p[k.name])]
            if bad:
                raise ConfigError(f"{self.op} estimator: parameter {bad[0].name} must be a "
                                  f"number, got {p[bad[0].name]!r}")

    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "op": self.op, "dtype": self.dtype,
            "layout": self.layout.to_json(), "pc": list(self.pc) if self.pc else None,
            "x_mean": self.x_mean.tolist(), "x_std": self.x_std.tolist(),
            "y_mean": self.y_mean.tolist(), "y_std": self.y_std.tolist(),
            "weights": [w.tolist() for w in self.weights],
            "biases": [b.tolist() for b in self.biases], "has_bwd": self.has_bwd,
            "zero_bwd": [list(z) for z in self.zero_bwd], "prior": self.prior,
            **({"quadratic": True} if self.quadratic else {}),
            "stats": {k: v for k, v in self.stats.items() if k not in VOLATILE}},
            sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "OpEstimator":
        try:
            d = json.loads(text)
            if not isinstance(d, dict) or d.get("format") != FORMAT:
                raise ValueError(f"format is {d.get('format') if isinstance(d, dict) else d!r}, "
                                 f"expected {FORMAT}")
            est = cls(str(d["op"]), str(d["dtype"]), Layout.from_json(d["layout"]),
                      tuple(int(e) for e in d["pc"]) if d["pc"] else None,
                      *(_array(d[k], 1) for k in ("x_mean", "x_std", "y_mean", "y_std")),
                      [_array(w, 2) for w in d["weights"]], [_array(b, 1) for b in d["biases"]],
                      bool(d["has_bwd"]), tuple((str(m), str(v)) for m, v in d["zero_bwd"]),
                      dict(d["stats"]), check_prior(d.get("prior"), str(d["op"])),
                      d.get("quadratic", False) is True)
            _check(est)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"not a valid sgdsim operator estimator: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                              ) from None
        return est


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _array(value, ndim: int) -> np.ndarray:
    a = np.array(value, dtype=float)
    if a.ndim != ndim or not np.all(np.isfinite(a)):
        raise ValueError(f"expected a finite {ndim}-D array, got shape {a.shape}")
    return a


def _check(est: OpEstimator) -> None:
    """Shapes chain from the layout's inputs to the outputs; PC matches the layout."""
    if est.pc is not None and (len(est.pc) != len(est.layout.numeric) or
                               any(e not in n.allowed for e, n in zip(est.pc, est.layout.numeric))):
        raise ValueError("principal component does not match the parameters")
    quadratic = n_pairwise(len(est.layout.numeric)) if est.quadratic else 0
    width = est.layout.width + (1 if est.pc else 0) + quadratic
    if est.x_mean.shape != (width,) or est.x_std.shape != (width,) or np.any(est.x_std <= 0):
        raise ValueError(f"input scaler is not {width} positive columns")
    if len(est.weights) != len(est.biases) or not est.weights:
        raise ValueError("weights and biases differ in number of layers")
    for w, b in zip(est.weights, est.biases):
        if w.shape[0] != width or b.shape != (w.shape[1],):
            raise ValueError(f"layer of shape {w.shape} does not follow width {width}")
        width = w.shape[1]
    outputs = 2 if est.has_bwd else 1
    if width != outputs or est.y_mean.shape != (outputs,) or est.y_std.shape != (outputs,):
        raise ValueError(f"expected {outputs} output(s) (has_bwd={est.has_bwd})")


def forward(x: np.ndarray, weights, biases) -> np.ndarray:
    """The MLP: ReLU hidden layers, identity output (sklearn's MLPRegressor, in numpy)."""
    h = x
    for w, b in zip(weights[:-1], biases[:-1]):
        h = np.maximum(h @ w + b, 0.0)
    return (h @ weights[-1] + biases[-1]).reshape(len(x), -1)


def encode(params: list[dict], layout: Layout, pc, quadratic: bool = False,
           held: bool = False) -> np.ndarray:
    """Input rows: log numeric parameters, mode one-hots, then log PC (if any); ``quadratic``:
    their pairwise products last. ``held`` (a correction of a prior, quadratic or network): the
    log parameters held within the grid's range, so that beyond it the prior alone scales: a
    ReLU network's correction otherwise goes on linearly in the log inputs (a relu 4-64x past
    its largest training size came out 1.23-1.83x its time, held 1.01x; that test,
    tests/test_estimator_prior.py, had passed and failed on 2026-12-03's machine)."""
    logx = bounded_inputs(params, layout) if held else log_inputs(params, layout)
    cols = [logx, one_hot(params, layout)]
    if pc:
        cols.append((logx @ np.array(pc, dtype=float))[:, None])
    if quadratic:
        cols.append(pairwise(logx))
    return np.hstack(cols)


# ---------------------------------------------------------------------------------- training

def _targets(records, has_bwd: bool, zero_bwd):
    """(log targets, true times, mask of the entries that count for the error)."""
    fwd = np.array([r.fwd_s for r in records])
    if not has_bwd:
        return np.log(fwd)[:, None], fwd[:, None], np.ones((len(fwd), 1), bool)
    bwd = np.array([0.0 if r.bwd_bound else r.bwd_s for r in records])  # a bound: not a target
    explained = np.array([any(str(r.params[m]) == v for m, v in zero_bwd) for r in records])
    # zero backward: a mode's (predicted 0 anyway) learns the forward, a smooth stand-in;
    # an unexplained one (a too small measurement) the smallest backward seen
    filled = np.where(bwd > 0, bwd, np.where(explained, fwd, bwd[bwd > 0].min()))
    y = np.log(np.stack([fwd, filled], axis=1))
    return y, np.stack([fwd, bwd], axis=1), np.stack([fwd > 0, bwd > 0], axis=1)


def _check_records(records) -> None:
    if len(records) < MIN_ROWS:
        raise ConfigError(f"{records[0].op if records else 'an operator'}: {len(records)} "
                          f"measurement(s) is too few to train on (need >= {MIN_ROWS})")
    kinds = {(r.op, r.dtype) for r in records}
    if len(kinds) > 1:
        raise ConfigError(f"train one estimator per operator type and dtype, got "
                          f"{sorted(kinds)[:3]}{' ...' if len(kinds) > 3 else ''}")
    keys = {tuple(sorted(r.params)) for r in records}
    if len(keys) > 1:
        raise ConfigError(f"{records[0].op}: the measurements name different parameters "
                          f"({' vs '.join(', '.join(k) for k in sorted(keys)[:2])})")


def train(records, shape_dims, rng: np.random.Generator, budget_s: float = 60.0,
          use_pc: bool = True, arch: tuple[int, int] | None = None,
          clock_stop: bool = True, use_prior: bool | str = False) -> OpEstimator:
    """The estimator of ``records`` (one op type and dtype): PC search (``use_pc``), then
    architecture search (or only fine-tuning of ``arch``), planned for ``budget_s`` seconds;
    ``use_prior``: correct a roofline (True, False or "auto": both, the better one; for a
    type with physical terms, those terms alone, ``terms_alone``).
    Deterministic for a given generator state, data and budget, unless the clock stops a
    search that overran its plan (``stats["budget_hit"]`` says so); ``clock_stop=False``
    never stops on the clock, so the result is the same on any machine, however loaded."""
    if fitted_alone(records[0].op, use_prior):
        return terms_alone(records, shape_dims, rng)
    if use_prior == "auto":
        return _with_or_without_prior(records, shape_dims, rng, budget_s, use_pc, arch, clock_stop)
    start = time.perf_counter()
    records, set_aside, params, layout, has_bwd, zero_bwd = _rows_of(records, shape_dims)
    if not 0 < budget_s < float("inf"):
        raise ConfigError(f"the training budget must be a positive number of seconds, got {budget_s}")
    state = rng.bit_generator.state
    y, times, mask, prior = _prior_targets(records, params, has_bwd, zero_bwd, use_prior)
    order = rng.permutation(len(records))
    n_val = max(2, int(round(VALIDATION * len(records))))
    fitter = Fitter(y, times, mask, order[n_val:], order[:n_val], budget_s, clock_stop)

    pc, judged, best = _networks(fitter, params, layout, y, rng, use_pc, arch)
    best = _quadratic_if_better(fitter, best, params, layout, pc, prior)
    quadratic = best.arch == QUADRATIC
    xm, xs, ym, ys = best.scaler
    alone, val_err = _prior_alone_where_better(fitter, best, prior)
    weights, biases = _without_correction(best.model, ym, ys, alone)
    est = OpEstimator(
        records[0].op, records[0].dtype, layout, pc, xm, xs, ym, ys, weights, biases,
        has_bwd, zero_bwd, prior=prior, quadratic=quadratic, stats={
            "prior_alone": [("fwd", "bwd")[j] for j in alone],
            "samples": len(records), "set_aside": set_aside, "validation_rows": n_val,
            "validation_error": val_err,
            "arch": "quad" if quadratic else f"L{best.arch[0]}N{best.arch[1]}",
            "alpha": best.alpha, "pc": pc_text(layout, pc),
            "pc_judged": [[pc_text(layout, e), err] for e, err in judged],
            "trainings": fitter.trainings,
            "budget_s": budget_s, "planned_s": round(fitter.planned, 3),
            "budget_hit": fitter.budget_hit, "rng_state": state,
            "train_s": time.perf_counter() - start})
    # scored in seconds on the rows no weight was fitted to (``times`` may be over a prior)
    est.stats["held_out_fwd_median"] = evaluate(est, [records[i] for i in order[:n_val]])["fwd_median"]
    return est


def _networks(fitter: Fitter, params, layout: Layout, y, rng, use_pc: bool, arch):
    """The PC search (``use_pc``), then the architecture search (or fine-tuning of ``arch``):
    (PC, the PC finalists judged, the best network's trial)."""
    pc, judged = None, []
    if use_pc and layout.numeric:
        logx, modes = log_inputs(params, layout), one_hot(params, layout)
        ranked = screen(logx[fitter.tr], modes[fitter.tr], y[fitter.tr], layout)
        pc, judged = choose_pc(fitter, logx, modes, ranked, rng)
    x = encode(params, layout, pc)
    if arch is None:
        tried = search_arch(fitter, x, rng, [])
    else:
        first = fitter.fit(x, arch, int(rng.integers(2 ** 31 - 1)), force=True)
        tried = fine_tune(fitter, x, rng, [first])
    return pc, judged, tried[0]


def _quadratic_if_better(fitter: Fitter, best, params, layout: Layout, pc, prior):
    """With a roofline prior, the best network's trial or a quadratic ridge correction of the
    prior (``Fitter.fit_ridge``), whichever scores lower on the validation rows: with 30 rows
    a type, a network has more weights than the data can pin (on this machine's grid the
    quadratic is kept in some folds for 10 of 17 types, conv2d's median error 37 -> 25 %:
    docs/ops.md). Only beside a prior: the correction is held at the grid's edges, so the
    prior must carry the scaling."""
    if prior is None or not layout.numeric:
        return best
    ridge = fitter.fit_ridge(encode(params, layout, pc, quadratic=True, held=True))
    return ridge if ridge.err < best.err else best


def _prior_alone_where_better(fitter: Fitter, best, prior) -> tuple[tuple[int, ...], float]:
    """(the outputs, 0 forward and 1 backward, on which the prior alone scores lower on the
    validation rows than the chosen correction does; the validation error of the model so
    made). One correction fits both directions and is chosen by their mean: on run 11's grid
    it bought mm a better backward with a worse forward (4-fold held out, 26.0 -> 20.2 % and
    11.6 -> 15.8 %, docs/ops-runs.md)."""
    if prior is None:
        return (), best.err
    pairs = list(zip(fitter.uncorrected(), best.by_output))
    alone = tuple(j for j, (a, corrected) in enumerate(pairs) if a < corrected)
    counted = [min(a, corrected) for a, corrected in pairs if np.isfinite(min(a, corrected))]
    return alone, (float(np.mean(counted)) if alone and counted else best.err)


def _without_correction(model, ym, ys, outputs) -> tuple[list, list]:
    """The model's weights and biases (copies), its last layer predicting a correction of
    exactly 0 on ``outputs``: weights 0, and a bias that the target scaling maps to 0."""
    weights = [np.array(w, dtype=float) for w in model.coefs_]
    biases = [np.array(b, dtype=float) for b in model.intercepts_]
    for j in outputs:
        weights[-1][:, j] = 0.0
        biases[-1][j] = -ym[j] / ys[j]
    return weights, biases


def fitted_alone(op: str, use_prior) -> bool:
    """Whether ``train`` gives ``op`` its physical terms alone, searching nothing: ``--prior
    auto`` for a type with terms (``terms_alone``)."""
    return use_prior == "auto" and has_terms(op)


def _rows_of(records, shape_dims):
    """(the rows to learn from, how many were set aside as bounds, their parameters, their
    layout, whether any backward was timed, the modes whose backward is always 0)."""
    records, set_aside = _learnable(records)
    params = [r.params for r in records]
    layout = layout_of(params, set(shape_dims))
    has_bwd = any(r.bwd_s > 0 for r in records)
    return records, set_aside, params, layout, has_bwd, zero_bwd_modes(records, layout) if has_bwd else ()


def _learnable(records) -> tuple[list, int]:
    """The measurements to train on, checked; a type whose rows are all bounds says so."""
    kept, set_aside = learnable(records)
    if set_aside and len(kept) < MIN_ROWS:
        raise ConfigError(f"{records[0].op}: {len(kept)} measurement(s) to train on, too few (need >= "
                          f"{MIN_ROWS}); {set_aside} more are upper bounds (or 0 s) of times too short to "
                          "resolve, which cannot be learned")
    _check_records(kept)
    return kept, set_aside


def _prior_targets(records, params, has_bwd: bool, zero_bwd, use_prior: bool):
    """(log targets, times, mask, prior): with a prior, what the roofline misses."""
    y, times, mask = _targets(records, has_bwd, zero_bwd)
    prior = fit_prior(records, has_bwd) if use_prior else None
    if prior is not None:
        base = prior_times(records[0].op, records[0].dtype, params, prior)[:, :y.shape[1]]
        y, times = y - np.log(base), times / base
    return y, times, mask, prior


def _with_or_without_prior(records, shape_dims, rng, budget_s, use_pc, arch, clock_stop) -> OpEstimator:
    """Both, on the same validation split with half the budget each; the one whose validation
    error is lower (the roofline prior helps some operator types and hurts others:
    docs/ops.md). Only for types without physical terms (``train``)."""
    tried = [train(records, shape_dims, copy.deepcopy(rng), budget_s / 2, use_pc, arch, clock_stop, choice)
             for choice in (False, True)]
    best = min(tried, key=lambda e: e.stats["validation_error"])
    best.stats["train_s"] = sum(e.stats["train_s"] for e in tried)  # both trainings ran
    best.stats["prior_chosen"] = best.prior is not None
    best.stats["validation_errors_without_with_prior"] = [e.stats["validation_error"] for e in tried]
    return best


def terms_alone(records, shape_dims, rng: np.random.Generator, folds: int = 4) -> OpEstimator:
    """A type's physical terms with no correction: the estimator ``--prior auto`` gives a
    type that has terms. Held out on runs 10 and 11's grids (4-fold), the terms alone scored
    lower or equal median error than the terms a network or quadratic corrects on 11 and 10 of
    14 such types, and a network alone was worse on all of them: the correction, chosen on 20
    validation rows, mostly fitted their noise (docs/ops-runs.md, 2026-12-03). Its validation
    error is the terms' own, ``folds``-fold held out: what ``profile --estimate`` states."""
    start = time.perf_counter()
    records, set_aside, params, layout, has_bwd, zero_bwd = _rows_of(records, shape_dims)
    _, times, mask = _targets(records, has_bwd, zero_bwd)
    prior = fit_prior(records, has_bwd)
    if prior is None:
        raise ConfigError(f"{records[0].op}: its terms cannot be fitted to these rows (no positive "
                          "times): measure it again, or train it with --prior off")
    n_in, n_out = encode(params[:1], layout, None).shape[1], times.shape[1]
    pred = held_out_times(records, has_bwd, rng.permutation(len(records)) % folds)[:, :times.shape[1]]
    return OpEstimator(
        records[0].op, records[0].dtype, layout, None, np.zeros(n_in), np.ones(n_in), np.zeros(n_out),
        np.ones(n_out), [np.zeros((n_in, n_out))], [np.zeros(n_out)], has_bwd, zero_bwd, prior=prior,
        stats={"samples": len(records), "set_aside": set_aside, "validation_rows": len(records),
               "validation_error": _held_out_error(pred, times, mask),
               "held_out_fwd_median": forward_median(pred, times, mask),
               "arch": "terms", "pc": "-", "prior_alone": ["fwd", "bwd"],
               "trainings": 0, "budget_hit": False, "train_s": time.perf_counter() - start})


def _held_out_error(pred, times, mask) -> float:
    """The terms' mean relative |error| (``Fitter``'s measure), each row held out once."""
    each = [e for e in output_errors(pred, times, mask & np.isfinite(pred)) if e is not None]
    return float(np.mean(each)) if each else 0.0
