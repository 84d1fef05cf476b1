"""Regimes of measured async training, from every worker's step completion times.

Two views of one run, per time window:

- throughput: examples completed in the window over its length;
- lock-step index: for every completion, the gap to the nearest completion of *another*
  worker, over the gap perfect interleaving would leave (the mean step period / W), averaged.
  0: workers finish together (a convoy on the shared links); about 1: evenly interleaved.

A regime that lasts shows up as a run whose windows all sit at one level; switching shows up
within a run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# the lab's fits read traces too, so the pairing lives there; examples/ and tests/ still
# import pulls_pushes and step_transfers from here
from ..lab.traces import ps_steps, pulls_pushes, step_transfers


@dataclass(frozen=True)
class WindowStats:
    start_s: float
    throughput: float   # examples/s
    lockstep: float     # nan with one worker or no completion in the window


def windows(step_times_s, batch_size: int, start_s: float, end_s: float,
            window_s: float) -> list[WindowStats]:
    """Per-window throughput and lock-step index of one run (``step_times_s``: per worker)."""
    per_worker = [np.asarray(t, float) for t in step_times_s]
    period = mean_period_s(per_worker, start_s, end_s)
    gaps = nearest_gaps(per_worker)  # once for the run: each window only averages a slice
    out = []
    t = start_s
    while t + window_s <= end_s + 1e-9:
        n = sum(int(((x > t) & (x <= t + window_s)).sum()) for x in per_worker)
        out.append(WindowStats(t, batch_size * n / window_s,
                               _index(per_worker, gaps, t, t + window_s, period)))
        t += window_s
    return out


def mean_period_s(per_worker, t0: float, t1: float) -> float:
    """Mean time between a worker's consecutive completions in (t0, t1]."""
    gaps = [np.diff(x[(x > t0) & (x <= t1)]) for x in per_worker]
    gaps = [g for g in gaps if len(g)]
    return float(np.mean(np.concatenate(gaps))) if gaps else float("nan")


def nearest_gaps(per_worker) -> list[np.ndarray]:
    """For every completion of every worker, the time to the nearest completion of another."""
    out = []
    for i, x in enumerate(per_worker):
        others = np.sort(np.concatenate([y for j, y in enumerate(per_worker) if j != i] or [[]]))
        if len(others) == 0:
            out.append(np.full(len(x), np.nan))
            continue
        k = np.searchsorted(others, x)
        after = np.abs(others[np.minimum(k, len(others) - 1)] - x)
        before = np.abs(x - others[np.maximum(k - 1, 0)])
        out.append(np.minimum(np.where(k < len(others), after, np.inf),
                              np.where(k > 0, before, np.inf)))
    return out


def lockstep_index(per_worker, t0: float, t1: float, period_s: float | None = None) -> float:
    """Mean gap to another worker's nearest completion over period/W (module docstring);
    ``period_s``: the workers' mean step period, by default measured in (t0, t1]."""
    per_worker = [np.asarray(x, float) for x in per_worker]
    period = mean_period_s(per_worker, t0, t1) if period_s is None else period_s
    return _index(per_worker, nearest_gaps(per_worker), t0, t1, period)


def _index(per_worker, gaps, t0: float, t1: float, period: float) -> float:
    W = len(per_worker)
    if W < 2 or not period > 0:
        return float("nan")
    inside = np.concatenate([g[(x > t0) & (x <= t1)] for x, g in zip(per_worker, gaps)])
    return float(inside.mean() / (period / W)) if len(inside) else float("nan")


def dwell_times_s(stats: list[WindowStats], window_s: float, threshold: float = 0.5) -> dict:
    """Mean time spent in lock-step (index < threshold) and interleaved before switching.

    Runs of consecutive windows on one side; a run cut by the end of the measurement counts
    too, so these are lower bounds when a regime outlasts the run.
    """
    states = [s.lockstep < threshold for s in stats if not math.isnan(s.lockstep)]
    spans: dict[bool, list[int]] = {True: [], False: []}
    k = 0
    for i, st in enumerate(states):
        k += 1
        if i == len(states) - 1 or states[i + 1] != st:
            spans[st].append(k)
            k = 0
    return {"lockstep_s": window_s * float(np.mean(spans[True])) if spans[True] else 0.0,
            "interleaved_s": window_s * float(np.mean(spans[False])) if spans[False] else 0.0,
            "lockstep_share": float(np.mean(states)) if states else float("nan")}


def transfer_stats(events, model_bytes: float | None = None) -> dict:
    """From a traced PS run (``run_training(trace=True).events``, PS first): how many workers
    pull (downlink) and push (uplink) at once, as shares of the time; how long the PS takes
    from a worker's last gradient byte to the first parameter byte of its next step (median
    and max, s); with ``model_bytes``, the bits per second each PS link carried while busy.

    A pull runs from the PS's first send to the worker's last received byte, a push from the
    worker's first send to the PS's last received byte (one machine-wide clock). The worker's
    own PULL timestamp is not used: it sends PULL while its gradients are still in its socket
    buffer, so that time belongs to the push.
    """
    ps = ps_steps(events)
    down, up = pulls_pushes(events)
    gaps = [min(ps[(r, s + 1)]["down_start"]) - max(e["up_end"])
            for (r, s), e in ps.items() if (r, s + 1) in ps]
    out = {"pulling": concurrency_shares(down), "pushing": concurrency_shares(up), "steps": len(down),
           "ps_gap_median_s": float(np.median(gaps)) if gaps else float("nan"),
           "ps_gap_max_s": float(np.max(gaps)) if gaps else float("nan")}
    if model_bytes:
        for name, iv in (("down", down), ("up", up)):
            shares = concurrency_shares(iv)
            span = max(b for _, b in iv) - min(a for a, _ in iv) if iv else 0.0
            busy = span * (1.0 - shares.get(0, 0.0))
            out[f"{name}_busy_bps"] = 8.0 * model_bytes * len(iv) / busy if busy > 0 else float("nan")
    return out


def two_worker_traces(runs) -> list[dict]:
    """``step_transfers`` of each traced two-worker run of a runs file (``async_regimes.py
    --trace``); untraced runs and other worker counts are skipped."""
    return [step_transfers(r["events"]) for r in runs if r.get("workers") == 2 and r.get("events")]


def concurrency_shares(intervals) -> dict[int, float]:
    """{k: share of the covered span during which exactly k intervals are open}."""
    if not intervals:
        return {}
    marks = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    open_, last, time_at = 0, marks[0][0], {}
    for t, d in marks:
        time_at[open_] = time_at.get(open_, 0.0) + (t - last)
        open_, last = open_ + d, t
    total = sum(time_at.values())
    return {k: v / total for k, v in sorted(time_at.items())} if total > 0 else {}


def together(transfers_a, transfers_b, tolerance: float = 0.03) -> list[list[float]]:
    """Completion times of pairs of transfers, one per worker, that start together (within
    ``tolerance`` of the first one's duration), from the later start: the rounds
    ``lab.fairness.share_cv`` turns into a share spread, as ``netbench --fanout``'s are."""
    out = []
    for s0, e0 in transfers_a:
        for s1, e1 in transfers_b:
            start = max(s0, s1)
            if abs(s0 - s1) <= tolerance * (e0 - s0) and min(e0, e1) > start:
                out.append([e0 - start, e1 - start])
    return out


def pull_phases(starts_a, starts_b) -> np.ndarray:
    """Where each of worker B's pulls starts within worker A's step, in A's steps (0: with A's
    pull, lock-step; 0.5: half a step later), from the two workers' pull start times."""
    return phase_steps(starts_a, starts_b)[0]


def phase_steps(starts_a, starts_b) -> tuple[np.ndarray, np.ndarray]:
    """``pull_phases`` and, for each, the length (s) of A's step it falls in."""
    a, b = np.sort(np.asarray(starts_a, float)), np.asarray(starts_b, float)
    i = np.searchsorted(a, b, side="right") - 1
    ok = (i >= 0) & (i < len(a) - 1)
    step_s = a[i[ok] + 1] - a[i[ok]]
    return (b[ok] - a[i[ok]]) / step_s, step_s


OCCUPANCY_EDGES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)


def folded(phases) -> np.ndarray:
    """How far each phase (``pull_phases``) sits from lock-step, in steps: 0 or 1 is lock-step,
    0.5 interleaved, so p folds to min(p, 1 − p)."""
    p = np.asarray(phases, float) % 1.0
    return np.minimum(p, 1.0 - p)


def phase_occupancy(phases, edges=OCCUPANCY_EDGES) -> np.ndarray:
    """Share of the steps whose ``folded`` phase falls in each bin of ``edges``."""
    counts = np.histogram(folded(phases), edges)[0]
    return counts / max(len(np.atleast_1d(phases)), 1)


LEGS = ("pull", "compute", "push", "total")


def leg_slopes(steps_a, steps_b, within_s: float) -> dict[str, tuple[float, float, float, int]]:
    """Which leg of a step pulls two workers back to lock-step, and against how much noise.

    Steps are ``[((pull_start, pull_end), (push_start, push_end)), ...]`` per worker. Each of
    A's steps is paired with B's step whose pull starts nearest, if within ``within_s``; x is
    that signed offset (B's pull start − A's). Per leg, B's minus A's time: the pull, the
    compute (pull end to push start), the push, and "total", the change of x to the next
    pair of steps. Per leg: (least-squares slope on x, its standard error, residual sd in s,
    pairs). A negative total slope restores lock-step (x shrinks by that fraction per step);
    the residual sd is the per-step noise it works against; nan with fewer than 3 pairs."""
    pull_b = np.array([s[0][0] for s in steps_b], float)
    rows = []
    for k in range(len(steps_a) - 1):
        j = int(np.argmin(np.abs(pull_b - steps_a[k][0][0]))) if len(pull_b) else -1
        if j < 0 or j + 1 >= len(steps_b) or abs(pull_b[j] - steps_a[k][0][0]) > within_s:
            continue
        (pa, qa), (pb, qb) = steps_a[k], steps_b[j]
        x = pb[0] - pa[0]
        rows.append((x, (pb[1] - pb[0]) - (pa[1] - pa[0]), (qb[0] - pb[1]) - (qa[0] - pa[1]),
                     (qb[1] - qb[0]) - (qa[1] - qa[0]), steps_b[j + 1][0][0] - steps_a[k + 1][0][0] - x))
    r = np.asarray(rows, float).reshape(-1, len(LEGS) + 1)
    out = {}
    for i, leg in enumerate(LEGS):
        coef, se, sd = least_squares(r[:, i + 1], r[:, :1])
        out[leg] = (float(coef[1]), float(se[1]), sd, len(r))
    return out


def least_squares(y, x) -> tuple[np.ndarray, np.ndarray, float]:
    """Ordinary least squares of ``y`` on an intercept and the columns of ``x``: (coefficients,
    their standard errors, residual sd); all nan with too few rows or collinear columns."""
    X = np.column_stack([np.ones(len(y)), x])
    n, k = X.shape
    if n <= k or np.linalg.matrix_rank(X) < k:
        return np.full(k, np.nan), np.full(k, np.nan), math.nan
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    var = float(resid @ resid) / (n - k)
    return coef, np.sqrt(np.diag(np.linalg.inv(X.T @ X)) * var), math.sqrt(var)


def late_share(lone_s: float, delta_s: float, end_a_s: float, end_b_s: float) -> float:
    """The link share the later of two transfers got while both ran, from their ends (A starts
    at 0, B at ``delta_s``; ``lone_s``: one transfer alone). Work-conserving two-phase model: A
    alone for δ, then B at φ and A at 1 − φ until the first ends; equal sharing gives 1/2."""
    if end_b_s <= end_a_s:
        return lone_s / (end_b_s - delta_s)
    return 1.0 - (lone_s - delta_s) / (end_a_s - delta_s)


def joiner_shares(transfers_a, transfers_b, lone_s: float) -> list[tuple[float, float]]:
    """(offset, share) of every pair of overlapping transfers, one per worker, in one
    direction: how late the later one started (s) and its ``late_share``. Traced training
    checks the late-comer's advantage that the two-transfer rounds measured (finding 5)."""
    out = []
    for a in transfers_a:
        for b in transfers_b:
            (s0, e0), (s1, e1) = sorted((a, b))
            if s1 < e0:
                out.append((s1 - s0, late_share(lone_s, s1 - s0, e0 - s0, e1 - s0)))
    return out


def against_opposite(transfers, opposite, same, lone_s: float, tolerance: float = 0.1) -> list[float]:
    """Times, in units of ``lone_s``, of one worker's transfers that start within
    ``tolerance``·lone_s of one of the other worker's ``opposite`` (other direction) transfers
    while none of its ``same`` (this direction) transfers is running: what one transfer each
    way does to a transfer, slowdowns included (a slowed one runs into the other's next
    transfer, so requiring no overlap at all would drop exactly those)."""
    out = []
    for s, e in transfers:
        if any(abs(o - s) < tolerance * lone_s for o, _ in opposite) and \
                not any(a < s < b for a, b in same):
            out.append((e - s) / lone_s)
    return out
