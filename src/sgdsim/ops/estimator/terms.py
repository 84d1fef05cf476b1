"""A prior made of physical terms (issue 38, item 3), for operator types that name them
(``OpType.prior_terms``): time ≈ Σ_j rate_j · term_j, one non-negative rate per term (a fixed
cost, autograd's bookkeeping, a pass over the elements per function, the elements beyond the
cache...), fitted by non-negative least squares on relative error. Where one roofline rate
cannot tell an add from a tanh, or data in cache from data in memory, these terms can, and
like the roofline they scale beyond the grid.

The cache size the terms use is chosen from ``CACHE_GRID``, and the floor no estimate goes
below (a low percentile of the training times, from ``FLOOR_PERCENTILES``) with it, by 4-fold
cross-validation on the type's own training rows (the forward times), so that nothing here is
fitted to held-out rows.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...errors import ConfigError
from ..optypes import REGISTRY
from ..optypes.base import GRAD_FLAGS, grad

CACHE_GRID = tuple(float(2 ** k) for k in range(18, 26))  # 256 KiB .. 32 MiB
# The floor: the roofline's 10th percentile (a call's cost doing nothing) held bmm's many
# 5-6 us calls at 9-10 us; the 1st for every type let them be, but raised conv2d's held-out
# error on 4 of 5 committed grids: each type takes the one that predicts its own rows better
FLOOR_PERCENTILES = (1.0, 10.0)
FOLDS = 4
# a small grid (10 shapes a type: the README's small path) leaves each fold fewer rows than a
# product's or a convolution's terms, and no cache size can be chosen by its error: then this
# one, and the lower floor (every such type was left untrained until 2026-12-03)
DEFAULT_CACHE = CACHE_GRID[2]  # 1 MiB


def has_terms(op: str) -> bool:
    return REGISTRY[op].prior_terms is not None


def term_matrix(op: str, dtype: str, params: list[dict], cache_bytes: float,
                backward: bool = False, merged: bool = False) -> np.ndarray:
    """(n, terms): each call's terms (``backward``: its backward's, where its type has them;
    ``merged``: the type's one set for all rows, ``OpType.merged_terms``)."""
    t = REGISTRY[op]
    f = (merged and t.merged_terms) or (backward and t.backward_terms) or t.prior_terms
    return np.array([f(p, dtype, cache_bytes) for p in params], dtype=float).reshape(len(params), -1)


def nnls(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||A x − b|| subject to x ≥ 0 (Lawson and Hanson's active set), columns scaled to
    unit norm first so that one tolerance fits terms of any size; an all-zero column gets 0."""
    norms = np.linalg.norm(A, axis=0)
    used = norms > 0
    As = A[:, used] / norms[used]
    n = As.shape[1]
    x, active = np.zeros(n), np.zeros(n, dtype=bool)
    tol = 1e-10 * max(1.0, float(np.linalg.norm(b)))
    for _ in range(3 * n + 1):
        grad = As.T @ (b - As @ x)
        if active.all() or np.max(np.where(active, -np.inf, grad)) <= tol:
            break
        active[int(np.argmax(np.where(active, -np.inf, grad)))] = True
        while True:
            z = np.zeros(n)
            z[active] = np.linalg.lstsq(As[:, active], b, rcond=None)[0]
            if (z[active] > 0).all():
                x = z
                break
            # step back toward x until the first active rate reaches 0, and set that one to
            # exactly 0: left to the rounding it may stay at 1e-16, active, and block forever
            neg = active & (z <= 0)
            ratio = np.full(n, np.inf)
            ratio[neg] = x[neg] / (x[neg] - z[neg])
            j = int(np.argmin(ratio))
            x = x + ratio[j] * (z - x)
            x[j] = 0.0
            active &= x > 0
            x[~active] = 0.0
    out = np.zeros(A.shape[1])
    out[used] = x / norms[used]
    return out


MIN_SUPPORT = 5  # rows a term must be non-zero in for its rate to be fitted


def _supported(X: np.ndarray, min_support: int | None) -> np.ndarray:
    """Which terms enough of these rows are non-zero in for a rate (the type's own number,
    else ``MIN_SUPPORT``)."""
    return (X != 0).sum(axis=0) >= (min_support or MIN_SUPPORT)


def fit_rates(X: np.ndarray, t: np.ndarray, min_support: int | None = None) -> list[float]:
    """Non-negative rates minimizing the relative error over rows with a time (> 0). A term
    non-zero in fewer than MIN_SUPPORT of them (or ``min_support``) gets rate 0: a rate a row
    or two pin down fits their noise, and a model's calls beyond them multiply it (the grid's
    one convolution with weights past a 4 MiB cache set 96 ns a weight, and ResNet-50's
    2.4 M-weight layers came out at 30x their time, docs/ops-runs.md, run 10)."""
    ok = t > 0
    supported = _supported(X[ok], min_support)
    w = 1.0 / t[ok]
    rates = np.zeros(X.shape[1])
    rates[supported] = nnls(X[ok][:, supported] * w[:, None], t[ok] * w)
    return [float(v) for v in rates]


def _floor(t: np.ndarray, percentile: float) -> float:
    return float(np.percentile(t[t > 0], percentile))


def _cv_errors(X: np.ndarray, t: np.ndarray, support: int | None) -> dict[float, float]:
    """Per floor percentile, the median relative error of the rates fitted on the other folds
    (rows i % FOLDS), no estimate below that percentile of the other folds' times."""
    fold = np.arange(len(t)) % FOLDS
    errs: dict[float, list] = {q: [] for q in FLOOR_PERCENTILES}
    for k in range(FOLDS):
        train, test = (fold != k) & (t > 0), (fold == k) & (t > 0)
        if train.sum() < X.shape[1] or not test.any():
            return {q: math.inf for q in FLOOR_PERCENTILES}
        raw = X[test] @ np.array(fit_rates(X[train], t[train], support))
        for q in FLOOR_PERCENTILES:
            errs[q] += list(np.abs(np.maximum(raw, _floor(t[train], q)) / t[test] - 1))
    return {q: float(np.median(e)) for q, e in errs.items()}


def fit_terms_prior(records, has_bwd: bool) -> dict | None:
    """The type's terms prior from its training rows, never below the floor the
    cross-validation chose (a call's cost doing nothing, as the roofline's fixed cost; with too
    few rows to cross-validate, ``DEFAULT_CACHE`` and the lower floor); None if no time is
    positive."""
    op, dtype = records[0].op, records[0].dtype
    params = [r.params for r in records]
    fwd = np.array([r.fwd_s for r in records])
    bwd = np.array([0.0 if r.bwd_bound else r.bwd_s for r in records])
    if not (fwd > 0).any():
        return None
    matrices = {c: term_matrix(op, dtype, params, c) for c in CACHE_GRID}
    merged = _needs_merging(op, dtype, matrices[CACHE_GRID[0]][fwd > 0])
    if merged:
        matrices = {c: term_matrix(op, dtype, params, c, merged=True) for c in CACHE_GRID}
    support = REGISTRY[op].min_support
    scores = {(c, q): e for c, X in matrices.items() for q, e in _cv_errors(X, fwd, support).items()}
    cache, q = min(scores, key=lambda cq: scores[cq])  # ties: the smaller cache, the lower floor
    if not math.isfinite(scores[(cache, q)]):  # folds smaller than the terms: nothing to choose by
        cache, q = DEFAULT_CACHE, FLOOR_PERCENTILES[0]
    X = matrices[cache]
    rates = fit_rates(X, fwd, support)
    prior = {"terms": op, "cache_bytes": cache, "floor_s": _floor(fwd, q), "fwd": rates, "bwd": rates}
    if (revision := REGISTRY[op].terms_revision) != 1:  # absent: 1, as every prior before
        prior["revision"] = revision
    if unfitted := [int(j) for j in np.flatnonzero(~_supported(X[fwd > 0], support))]:
        prior["unfitted"] = unfitted
    if has_bwd and (bwd > 0).sum() >= 2:
        Xb = term_matrix(op, dtype, params, cache, backward=True, merged=merged)
        prior["bwd"] = fit_rates(Xb, bwd, support)
        # the backward's own terms too few rows had (run 29's broadcast adds at 3-7x)
        if unfitted := [int(j) for j in np.flatnonzero(~_supported(Xb[bwd > 0], support))]:
            prior["bwd_unfitted"] = unfitted
    return {**prior, "merged": True} if merged else prior


def unfitted_calls(op: str, dtype: str, params: list[dict], prior: dict) -> int:
    """How many of these calls ``unfitted_mask`` flags."""
    return int(unfitted_mask(op, dtype, params, prior).sum())


def unfitted_mask(op: str, dtype: str, params: list[dict], prior: dict) -> np.ndarray:
    """Per call, whether it has a term too few training rows had for a rate, forward
    (``prior["unfitted"]``) or backward (``prior["bwd_unfitted"]``): a path or a size the grid
    drew seldom or never (attention's dropout path in 4 rows of 10, an in-place product that
    saves its target, a convolution's weights past the cache, a broadcast add's backward),
    whose part of their time has no rate and is left out. A value never seen is flagged apart
    (``features.unseen_modes``)."""
    flagged = np.zeros(len(params), dtype=bool)
    for key, backward in (("unfitted", False), ("bwd_unfitted", True)):
        if (cols := prior.get(key)) and params:
            X = term_matrix(op, dtype, params, prior["cache_bytes"], backward=backward,
                            merged=prior.get("merged", False))
            hit = (X[:, cols] != 0).any(axis=1)
            flagged |= hit & _has_backward(params) if backward else hit
    return flagged


def _has_backward(params: list[dict]) -> np.ndarray:
    """Whether each call has a backward: a gradient flag at 1, or no flag to say otherwise."""
    return np.array([not any(f in p for f in GRAD_FLAGS) or any(grad(p[f]) for f in GRAD_FLAGS if f in p)
                     for p in params], dtype=bool)


def _needs_merging(op: str, dtype: str, X: np.ndarray) -> bool:
    """Whether a call of the type could find no term that enough rows share for a rate
    (``MIN_SUPPORT``): a path of the type the grid drew too seldom (conv2d's per-image
    products in a grid of 10 or 30 shapes), whose calls would then be estimated at the floor.
    Such a type, where it has one, falls back to its one set of terms for every row. Asked of
    the training rows and of ``PROBES`` calls the type's own sampler draws: a 10-shape grid
    with no per-image row at all put every 1x1 layer of ResNet-50 at 0.00-0.02x its time.
    ``X``: the terms of the rows with a time."""
    if REGISTRY[op].merged_terms is None:
        return False
    supported = _supported(X, None)  # a path asks the default, whatever a type asks of a rate
    used = np.vstack([X != 0, _probe_terms_used(op, dtype)])
    return bool((used & supported).sum(axis=1).min(initial=1) == 0)


PROBES = 64  # the sampler's calls a path must be seen among (conv2d: 1x1 layers are ~1 in 6)


@functools.lru_cache(maxsize=None)
def _probe_terms_used(op: str, dtype: str) -> np.ndarray:
    """Which terms each of ``PROBES`` calls of the type, as its grid draws them (the same ones
    every time), is non-zero in: computed once, not in every fold of every training."""
    rng = np.random.default_rng(0)
    used = term_matrix(op, dtype, [REGISTRY[op].sample(rng) for _ in range(PROBES)], CACHE_GRID[0]) != 0
    used.flags.writeable = False
    return used


class StaleTerms(ConfigError):
    """An estimator fitted to other terms than this sgdsim computes. ``what`` says how; the
    message adds what to run, which a caller that knows the database names in full."""

    def __init__(self, what: str):
        super().__init__(f"{what}: train it again (sgdsim ops train)")
        self.what = what


def terms_times(op: str, dtype: str, params: list[dict], prior: dict) -> np.ndarray:
    """(n, 2) seconds: the terms at their rates, never below the type's floor."""
    merged = prior.get("merged", False)
    if (revision := prior.get("revision", 1)) != REGISTRY[op].terms_revision:
        raise StaleTerms(f"the {op} estimator was fitted to revision {revision} of its terms, this "
                         f"sgdsim computes revision {REGISTRY[op].terms_revision}")
    X = term_matrix(op, dtype, params, prior["cache_bytes"], merged=merged)
    if X.shape[1] != len(prior["fwd"]):
        raise StaleTerms(f"the {op} estimator has {len(prior['fwd'])} terms, this sgdsim computes "
                         f"{X.shape[1]}")
    Xb = term_matrix(op, dtype, params, prior["cache_bytes"], backward=True, merged=merged)
    out = np.stack([X @ np.array(prior["fwd"]), Xb @ np.array(prior["bwd"])], axis=1)
    return np.maximum(out, prior["floor_s"])


def check_terms_prior(value: dict, op: str | None) -> dict:
    """A stored terms prior, checked as it is read."""
    if not {"terms", "cache_bytes", "floor_s", "fwd", "bwd"} <= set(value) <= \
            {"terms", "cache_bytes", "floor_s", "fwd", "bwd", "merged", "unfitted", "bwd_unfitted",
             "revision"}:
        raise ValueError("a terms prior names terms, cache_bytes, floor_s, fwd and bwd "
                         "(and merged, unfitted, bwd_unfitted, revision)")
    if not isinstance(value.get("merged", False), bool):
        raise ValueError("a terms prior's merged is true or false")
    revision = value.get("revision", 1)
    if not (isinstance(revision, int) and not isinstance(revision, bool) and revision >= 1):
        raise ValueError("a terms prior's revision is a whole number from 1")
    if op is not None and value["terms"] != op:
        raise ValueError(f"a terms prior of {value['terms']!r} in a {op} estimator")
    for name in ("cache_bytes", "floor_s"):
        v = value[name]
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"a terms prior's {name} must be positive")
    rates = [value["fwd"], value["bwd"]]
    if (not all(isinstance(r, list) and r for r in rates) or len(rates[0]) != len(rates[1]) or
            not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for r in rates for v in r)):
        raise ValueError("a terms prior's rates are two lists of the same length, each ≥ 0")
    checked = {"terms": str(value["terms"]), "cache_bytes": float(value["cache_bytes"]),
               "floor_s": float(value["floor_s"]), "fwd": [float(v) for v in value["fwd"]],
               "bwd": [float(v) for v in value["bwd"]]}
    for key in ("unfitted", "bwd_unfitted"):
        unfitted = value.get(key, [])
        if not (isinstance(unfitted, list) and all(isinstance(j, int) and not isinstance(j, bool)
                                                   and 0 <= j < len(checked["fwd"]) for j in unfitted)):
            raise ValueError(f"a terms prior's {key} lists term indices")
        if unfitted:
            checked[key] = [int(j) for j in unfitted]
    if revision != 1:
        checked["revision"] = revision
    return {**checked, "merged": True} if value.get("merged") else checked
