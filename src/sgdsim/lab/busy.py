"""Busy shares: what a PS's NIC delivers to training traffic while both directions are busy.

``netbench --lab --two-way`` holds each split of flows (n out of the PS, m into it) for
seconds. In async PS training, transfers of one model's size start and end all the time, and
traced lab runs of 4 and 8 workers deliver 0.68-0.80 of each direction once the NIC carries 3
or more of them both ways, where the table holds 0.57-0.99 depending on the split
(docs/validation/regimes/, finding 7).

Fit, from traced runs (``run_training(..., trace=True)``): between consecutive starts and
ends of transfers the NIC's state (n, m) is fixed. A direction is taken to move
B·f(n, m) bytes per second where the table ``f`` holds, and B·c where both directions are
busy with n + m >= ``BUSY_FLOWS``. Every transfer moves the model's bytes, so over a run a
direction moved N·S = B·(Σ f·t over the other busy states + c·t_busy); pooled over runs,
that gives c. Three transfers on the NIC deliver more than four or more (traced runs of 3
workers against 4 and 8; finding 16), so c may be fitted per class of flow counts, one
equation per run. It is exact for traffic that follows the model (tests/test_busy.py).
"""
from __future__ import annotations

import numpy as np

from ..analytic.two_way import BUSY_FLOWS, TwoWay, check_table
from ..errors import ConfigError
from .traces import pulls_pushes


def busy_shares(runs, model_bytes, bandwidth_bps: float, table, flows=(BUSY_FLOWS,),
                shape: float = 0.0) -> tuple:
    """(pull, push) busy shares from traced runs: ``runs`` holds each run's ``events``
    (``run_training(trace=True).events``), or its (pulls, pushes) lists of (start, end);
    ``model_bytes`` is a transfer's bytes, one number or one per run. ``flows`` (ascending,
    from ``BUSY_FLOWS``): the flow count each share starts at. With one, a share per direction;
    with several, a tuple per direction (``analytic.two_way.busy_share`` reads it): (3, 4) fits
    one share for 3 transfers on the NIC and one from 4 on. ``shape`` s: the share of a busy
    split is c times the table's entry (capped at 1) to the power s (``spec.two_way.with_busy``).

    Per run and direction, moved − base = B·Σ_k c_k·Σ f^s·t over the intervals both directions
    were busy with class k's flow counts (s = 0: their time t_k). Least squares weighted by
    1/Σ_k t_k (a run's bytes vary with its busy time), which for one class is the pooled ratio
    Σ(moved − base) / (B·Σ t); a run that never had the NIC busy both ways says nothing of c and
    is left out."""
    classes = check_flows(flows)
    rate = bandwidth_bps / 8.0
    rows: list[list] = [[], []]
    for d, unexplained, t, f, both, k in busy_terms(runs, model_bytes, bandwidth_bps, table, classes):
        g = t * np.minimum(f, 1.0) ** shape
        rows[d].append([unexplained, *(rate * float(np.sum(g[both & (k == i)])) for i in range(len(classes)))])
    shares = [_weighted_fit(np.array(r, float).reshape(-1, len(classes) + 1), classes) for r in rows]
    return tuple(float(c[0]) if len(classes) == 1 else tuple(float(v) for v in c) for c in shares)


def busy_terms(runs, model_bytes, bandwidth_bps: float, table, classes):
    """Per traced run and direction d (0 pulls, 1 pushes): (d, the bytes the table does not
    explain: moved − B·Σ f·t outside the busy states, the intervals' lengths t, the table's
    share f of each, which intervals are busy both ways, each interval's class index k). The
    busy shares' equations are built from these; ``runs`` and ``model_bytes`` as in
    ``busy_shares``, ``classes`` from ``check_flows``."""
    sizes = np.broadcast_to(np.asarray(model_bytes, float), (len(runs),))
    rate, rule = bandwidth_bps / 8.0, TwoWay(table=check_table(table))
    for run, size in zip(runs, sizes):
        down, up = run if isinstance(run, tuple) else pulls_pushes(run)
        for d, (mine, other) in enumerate(((down, up), (up, down))):
            n, m, t = split_intervals(mine, other)
            f = rule.grid(int(max(n.max(initial=0), m.max(initial=0))) + 1)[d][n, m]
            both = (n >= 1) & (m >= 1) & (n + m >= BUSY_FLOWS)
            k = np.searchsorted(classes, n + m, side="right") - 1
            base = rate * float(np.sum((f * t)[(n >= 1) & ~both]))
            yield d, size * len(mine) - base, t, f, both, k


def check_flows(flows) -> np.ndarray:
    """The flow counts each busy share starts at, as an array, or one ConfigError line."""
    classes = np.array(flows, dtype=int)
    if classes.ndim != 1 or len(classes) == 0 or classes[0] != BUSY_FLOWS or (np.diff(classes) <= 0).any():
        raise ConfigError(f"busy share classes must be ascending flow counts starting at {BUSY_FLOWS}, "
                          f"got {tuple(flows)}")
    return classes


def _weighted_fit(rows: np.ndarray, classes) -> np.ndarray:
    y, x = rows[:, 0], rows[:, 1:]
    for i, busy in enumerate(x.sum(axis=0)):
        if busy <= 0:
            raise ConfigError("busy shares need traced runs in which both directions of the PS's NIC "
                              f"carried {_label(classes, i)} at once (runs of {classes[i]} or more workers)")
    total = x.sum(axis=1)
    keep = total > 0
    w = 1.0 / np.sqrt(total[keep])
    a, b = x[keep] * w[:, None], y[keep] * w
    if np.linalg.matrix_rank(a) < len(classes):
        raise ConfigError(f"busy shares by flow count {tuple(int(c) for c in classes)}: the runs do not "
                          "tell the classes apart (trace runs of different worker counts)")
    return np.linalg.lstsq(a, b, rcond=None)[0]


def _label(classes, i: int) -> str:
    """Class i's flow counts in words: "3 transfers", "4-5 transfers", "6 or more transfers"."""
    if i == len(classes) - 1:
        return f"{classes[i]} or more transfers"
    last = classes[i + 1] - 1
    return f"{classes[i]} transfers" if last == classes[i] else f"{classes[i]}-{last} transfers"


def split_intervals(mine, other) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Between consecutive starts and ends: transfers under way in this direction (n) and the
    other (m), and the interval's length."""
    marks = sorted([(a, 0, 1) for a, _ in mine] + [(b, 0, -1) for _, b in mine]
                   + [(a, 1, 1) for a, _ in other] + [(b, 1, -1) for _, b in other])
    counts, last, rows = [0, 0], marks[0][0] if marks else 0.0, []
    for t, which, step in marks:
        rows.append((counts[0], counts[1], t - last))
        counts[which] += step
        last = t
    a = np.array(rows, dtype=float).reshape(-1, 3)
    return a[:, 0].astype(int), a[:, 1].astype(int), a[:, 2]
