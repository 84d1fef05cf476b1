"""The searches of Tianshu §3.2.2 Step 2 and §3.2.3, planned to fit a time budget.

*Principal component.* The paper trains the default MLP (6 layers of 6 neurons) once per
candidate complexity function. One such training costs 0.3-3 s here (L-BFGS, 300-1000 rows,
2 cores), and conv2d has 2^7 candidates, so every candidate is first *screened* by a least-
squares fit of log time on a piecewise-linear function of log PC (hinges at its quintiles: a
fixed overhead below, the complexity's slope above) plus the modes; exhaustively up to
``EXHAUSTIVE_MAX`` candidates, by coordinate descent beyond. The best ``PC_FINALISTS`` are then
judged as in the paper by the validation error of the default MLP, but with the PC (and the
modes) as its only inputs (``choose_pc`` says why).

*Architecture.* The paper's range, [3, 20] layers x [3, 40] neurons, is 684 networks: too many
for a minute. The default network and a random sample of the range (``_cheap_first``) are
trained, then the ``TOP_K`` best are *fine-tuned*: trained again from other initial weights and
with other L2 penalties (L-BFGS has no learning rate or batch size; these are its knobs).
Short "scouting" trainings (successive halving) were tried and dropped: after 150 iterations
the 6x6 network scored 12 % where its full training scored 2 %, so they ranked by speed of
convergence, not by accuracy.

*Budget.* How many trainings each step gets is decided from a cost model of one training
(``fit_cost``: seconds on the 2-core reference machine, from rows, layers and weights), never
from the clock, so a seed gives the same model on any machine. The clock only stops a search
that overruns the budget by half (``OVERRUN``; the model's stats then say ``budget_hit``).

The solver is L-BFGS, not Adam: on these small data sets it reached 2-3 % validation error in
0.3 s where Adam needed 3 s for 4-15 % (measured on the synthetic conv of the tests).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .features import Layout, candidates, n_candidates

DEFAULT_ARCH = (6, 6)  # layers, neurons per layer (the paper's default model)
LAYERS, NEURONS = range(3, 21), range(3, 41)  # the paper's architecture range
ALPHA = 1e-4  # L2 penalty of every training but the fine-tuning's
FINE_ALPHAS = (1e-4, 1e-5, 1e-3)  # fine-tuning: each with fresh initial weights
FULL_ITERS = 800  # L-BFGS iteration cap of every training
ITER_SHARE = 0.5  # of the cap, that a training runs on average
OVERRUN = 1.5  # the clock stops a search at OVERRUN x budget (a machine slower than planned)
EXHAUSTIVE_MAX = 256
PC_FINALISTS = 3
JUDGE_SEEDS = 2
ARCH_DRAWS = 16  # networks drawn from the range (the budget may train fewer)
TOP_K = 5  # architectures fine-tuned (the paper keeps the top 5)
SHARES = {"pc": 0.2, "arch": 0.45}  # of the budget; fine-tuning gets the rest
RIDGE_PENALTIES = (0.1, 1.0, 10.0)  # the quadratic candidate's L2 penalties, on standardised inputs
QUADRATIC = (0, 0)  # a Trial's "architecture" when it is the quadratic ridge, not a network


@dataclass
class Trial:
    err: float  # validation error (mean relative |error|)
    arch: tuple[int, int]
    alpha: float
    seed: int
    model: object  # the fitted sklearn MLPRegressor
    scaler: tuple  # x mean, x std, y mean, y std (of the training rows)
    by_output: tuple = ()  # the validation error of each output (forward, backward)


def fit_cost(arch, rows: int, n_in: int, n_out: int, iters: int = FULL_ITERS) -> float:
    """Expected seconds of one L-BFGS training on the 2-core reference machine: the time per
    iteration fitted to 3x3 ... 20x40 networks on 300 and 1000 rows, times the iterations
    L-BFGS typically runs before it converges (about half the cap: whole searches took 0.35-
    0.46 of the time the cap predicts)."""
    layers, width = arch
    weights = n_in * width + (layers - 1) * width * width + width * n_out
    per_iter = rows * (0.45e-6 * (layers + 1) + 0.8e-9 * weights) + 5e-5 * (layers + 1)
    return ITER_SHARE * iters * per_iter


def fit_mlp(x, y, arch, seed: int, alpha: float = ALPHA, iters: int = FULL_ITERS):
    """One MLP (ReLU, L-BFGS) on standardised x and y, single-threaded (2 shared cores)."""
    from sklearn.neural_network import MLPRegressor
    from threadpoolctl import threadpool_limits

    layers, width = arch
    model = MLPRegressor(hidden_layer_sizes=(width,) * layers, activation="relu",
                         solver="lbfgs", alpha=alpha, max_iter=iters, max_fun=10 * iters,
                         tol=1e-7, random_state=seed)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # ConvergenceWarning: the iteration cap is the plan
        model.fit(x, y if y.shape[1] > 1 else y[:, 0])
    return model


class Fitter:
    """Trains on the training rows, scores on the validation rows, and keeps the budget."""

    def __init__(self, y, times, mask, tr, val, budget_s: float, clock_stop: bool = True):
        self.y, self.times, self.mask, self.tr, self.val = y, times, mask, tr, val
        self.budget_s, self.start = budget_s, time.perf_counter()
        self.clock_stop = clock_stop  # False: the plan alone decides (reproducible anywhere)
        self.trainings, self.planned, self.budget_hit = 0, 0.0, False  # planned: cost model

    def cost(self, x, arch, iters=FULL_ITERS) -> float:
        return fit_cost(arch, len(self.tr), x.shape[1], self.y.shape[1], iters)

    def fit(self, x, arch, seed: int, alpha=ALPHA, iters=FULL_ITERS,
            force: bool = False) -> Trial | None:
        """One training, or None once the clock passed ``OVERRUN`` x budget (``force``: the
        search's first full model, trained anyway)."""
        if (not force and self.clock_stop
                and time.perf_counter() - self.start > OVERRUN * self.budget_s):
            self.budget_hit = True
            return None
        xt, yt = x[self.tr], self.y[self.tr]
        xm, xs = xt.mean(0), _std(xt)
        ym, ys = yt.mean(0), _std(yt)
        model = fit_mlp((xt - xm) / xs, (yt - ym) / ys, arch, seed, alpha, iters)
        self.trainings += 1
        self.planned += self.cost(x, arch, iters)
        pred = model.predict((x[self.val] - xm) / xs).reshape(len(self.val), -1) * ys + ym
        err, by_output = self._score(pred)
        return Trial(err, tuple(arch), alpha, seed, model, (xm, xs, ym, ys), by_output)

    def _score(self, log_pred) -> tuple[float, tuple[float, ...]]:
        """(the validation error, each output's) of predicted log targets."""
        with np.errstate(over="ignore", invalid="ignore"):
            each = output_errors(np.exp(log_pred), self.times[self.val], self.mask[self.val])
        counted = [e for e in each if e is not None]
        err = float(np.mean(counted)) if counted else 0.0
        return (err if np.isfinite(err) else np.inf), tuple(np.inf if e is None or not np.isfinite(e)
                                                            else e for e in each)

    def uncorrected(self) -> tuple[float, ...]:
        """Each output's validation error with no correction at all (the prior alone, where
        the targets are what a prior misses)."""
        return self._score(np.zeros((len(self.val), self.y.shape[1])))[1]

    def fit_ridge(self, x) -> Trial:
        """A linear least-squares model of the targets on ``x`` (the quadratic terms in it),
        L2-penalised, the penalty chosen from ``RIDGE_PENALTIES`` on the validation rows.
        Closed form: its cost is nothing beside a network's, so it is off the budget."""
        xt, yt = x[self.tr], self.y[self.tr]
        xm, xs = xt.mean(0), _std(xt)
        ym, ys = yt.mean(0), _std(yt)
        z, t, zv = (xt - xm) / xs, (yt - ym) / ys, (x[self.val] - xm) / xs
        best = None
        for alpha in RIDGE_PENALTIES:
            w = np.linalg.solve(z.T @ z + alpha * np.eye(z.shape[1]), z.T @ t)
            err, by_output = self._score(zv @ w * ys + ym)
            if best is None or err < best.err:
                best = Trial(err, QUADRATIC, alpha, 0, _Linear(w), (xm, xs, ym, ys), by_output)
        self.trainings += len(RIDGE_PENALTIES)
        return best


class _Linear:
    """A network without hidden layers, in MLPRegressor's attributes (``model.forward`` reads
    them): the standardised inputs times ``w``; the targets are centred, so no intercept."""

    def __init__(self, w: np.ndarray):
        self.coefs_, self.intercepts_ = [w], [np.zeros(w.shape[1])]


def _std(a: np.ndarray) -> np.ndarray:
    s = a.std(0)
    return np.where(s > 1e-12, s, 1.0)  # a column constant on the training rows: left as is


def output_errors(pred, true, mask) -> list[float | None]:
    """Each output's mean relative |error| on the rows ``mask`` counts (None: no such row)."""
    return [float(np.mean(np.abs(pred[m, j] - true[m, j]) / true[m, j])) if (m := mask[:, j]).any()
            else None for j in range(true.shape[1])]


def forward_median(pred, true, mask) -> float | None:
    """The median relative |error| of the forward times (column 0) on the rows ``mask``
    counts, None without such a row: the statistic a type's retest median is read against
    (``sgdsim ops stats``, docs/ops.md §5), where the mean above is what training minimises."""
    m = mask[:, 0] & np.isfinite(pred[:, 0])
    return float(np.median(np.abs(pred[m, 0] / true[m, 0] - 1.0))) if m.any() else None


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2 ** 31 - 1))


def _affordable(costs, cap_s: float, minimum: int) -> int:
    """How many of ``costs`` (in order) fit in ``cap_s`` seconds, but at least ``minimum``."""
    total, n = 0.0, 0
    for c in costs:
        if n >= minimum and total + c > cap_s:
            break
        total, n = total + c, n + 1
    return n


# ----------------------------------------------------------------------- principal component

def screen(logx: np.ndarray, modes: np.ndarray, y: np.ndarray, layout: Layout) -> list[tuple]:
    """Candidate exponent vectors, best first, by the least-squares screen (see module doc)."""
    if not layout.numeric:
        return []
    base = np.hstack([np.ones((len(y), 1)), modes])
    memo: dict[tuple, float] = {}

    def score(exps) -> float:
        if exps not in memo:
            z = logx @ np.array(exps, dtype=float)
            knots = np.unique(np.percentile(z, [20, 40, 60, 80]))
            a = np.hstack([base, z[:, None], np.maximum(z[:, None] - knots[None, :], 0.0)])
            coef, *_ = np.linalg.lstsq(a, y, rcond=None)
            memo[exps] = float(np.mean((a @ coef - y) ** 2))
        return memo[exps]

    if n_candidates(layout) <= EXHAUSTIVE_MAX:
        for exps in candidates(layout):
            score(exps)
    else:
        _descend(score, layout)
    return sorted(memo, key=lambda e: (memo[e], e))


def _descend(score, layout: Layout) -> None:
    """Coordinate descent over the exponents from two starts (every parameter at its first
    allowed exponent, i.e. linear; only the tensor dimensions linear), until no single change
    helps. ``score`` memoises: every candidate it saw is ranked."""
    first = tuple(n.allowed[0] for n in layout.numeric)
    dims = tuple(1 if n.allowed == (1, 0) else 0 for n in layout.numeric)
    for exps in {first, dims} - {tuple(0 for _ in first)}:
        best, improved = score(exps), True
        while improved:
            improved = False
            for i, n in enumerate(layout.numeric):
                for e in n.allowed:
                    trial = exps[:i] + (e,) + exps[i + 1:]
                    if any(trial) and score(trial) < best - 1e-12:
                        exps, best, improved = trial, score(trial), True


def choose_pc(fitter: Fitter, logx, modes, ranked: list[tuple], rng) -> tuple[tuple, list]:
    """Paper Step 2 on the screen's finalists: the default MLP judges each, best of
    ``JUDGE_SEEDS`` initial weights (the same for every finalist). Its inputs are the PC and
    the modes only: with the log parameters beside it, the MLP rebuilds any product of powers
    itself and its error hardly depends on the PC (synthetic conv: 2.5-3 % for the four best
    candidates, +-30 % between initial weights, a dead 6-wide network now and then), while
    alone the PC must explain the time (2.2 % for the true function, 28-70 % for the next).
    Returns the exponents and [(exponents, error)] of the finalists judged."""
    if len(ranked) < 2:
        return (ranked[0] if ranked else None), []
    seeds = [_seed(rng) for _ in range(JUDGE_SEEDS)]
    judge_x = [np.hstack([modes, (logx @ np.array(e, dtype=float))[:, None]])
               for e in ranked[:PC_FINALISTS]]
    cost = fitter.cost(judge_x[0], DEFAULT_ARCH) * JUDGE_SEEDS
    n = _affordable([cost] * len(judge_x), SHARES["pc"] * fitter.budget_s, 2)
    judged = []
    for exps, x in zip(ranked[:n], judge_x):
        errs = [t.err for s in seeds if (t := fitter.fit(x, DEFAULT_ARCH, s))]
        judged.append((exps, min(errs, default=np.inf)))
    best = min(range(len(judged)), key=lambda i: (judged[i][1], i))  # a tie: the screen's
    return judged[best][0], judged


# ------------------------------------------------------------------------------ architecture

def search_arch(fitter: Fitter, x, rng, pool: list[Trial]) -> list[Trial]:
    """Random search of the grid, then fine-tuning of the best; every training, best first
    (``pool``: trainings done already)."""
    grid = [(layers, width) for layers in LAYERS for width in NEURONS if
            (layers, width) != DEFAULT_ARCH]
    costs = np.array([fitter.cost(x, a) for a in grid])
    drawn = rng.choice(len(grid), size=ARCH_DRAWS, replace=False, p=_cheap_first(costs))
    sample = [DEFAULT_ARCH] + [grid[i] for i in drawn]
    n = _affordable([fitter.cost(x, a) for a in sample], SHARES["arch"] * fitter.budget_s, 2)
    pool = pool + [t for i, a in enumerate(sample[:n])
                   if (t := fitter.fit(x, a, _seed(rng), force=i == 0))]
    return fine_tune(fitter, x, rng, pool)


def _cheap_first(costs: np.ndarray) -> np.ndarray:
    """Draw probabilities proportional to 1 / cost: the deep, wide end of the paper's range
    is tried too, but a budget buys many more small networks, and in our measurements the
    best were small (L3N28 to L8N12; deep narrow ones often die in training)."""
    p = 1.0 / costs
    return p / p.sum()


def fine_tune(fitter: Fitter, x, rng, pool: list[Trial]) -> list[Trial]:
    """The ``TOP_K`` best architectures again, fresh initial weights and each L2 penalty,
    while the budget lasts (at least one)."""
    pool = sorted(pool, key=lambda t: t.err)
    jobs = [(t.arch, a) for t in pool[:TOP_K] for a in FINE_ALPHAS]
    left = fitter.budget_s - fitter.planned
    n = _affordable([fitter.cost(x, arch) for arch, _ in jobs], left, 1)
    pool += [t for arch, a in jobs[:n] if (t := fitter.fit(x, arch, _seed(rng), a))]
    return sorted(pool, key=lambda t: t.err)
