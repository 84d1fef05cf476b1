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
that gives c. It is exact for traffic that follows the model (tests/test_busy.py).
"""
from __future__ import annotations

import numpy as np

from ..analytic.two_way import BUSY_FLOWS, TwoWay, check_table
from ..errors import ConfigError
from ..validate.regimes import pulls_pushes


def busy_shares(runs, model_bytes: float, bandwidth_bps: float, table) -> tuple[float, float]:
    """(pull, push) busy shares c from traced runs: ``runs`` holds each run's ``events``
    (``run_training(trace=True).events``), or its (pulls, pushes) lists of (start, end)."""
    moved, base, busy = np.zeros(2), np.zeros(2), np.zeros(2)
    rate, rule = bandwidth_bps / 8.0, TwoWay(table=check_table(table))
    for run in runs:
        down, up = run if isinstance(run, tuple) else pulls_pushes(run)
        for d, (mine, other) in enumerate(((down, up), (up, down))):
            n, m, t = _states(mine, other)
            f = rule.grid(int(max(n.max(initial=0), m.max(initial=0))) + 1)[d][n, m]
            both = (n >= 1) & (m >= 1) & (n + m >= BUSY_FLOWS)
            moved[d] += model_bytes * len(mine)
            base[d] += rate * float(np.sum((f * t)[(n >= 1) & ~both]))
            busy[d] += float(np.sum(t[both]))
    if not (busy > 0).all():
        raise ConfigError("busy shares need traced runs in which both directions of the PS's NIC "
                          f"carried {BUSY_FLOWS} or more transfers at once (4 or more workers)")
    c = (moved - base) / (rate * busy)
    return float(c[0]), float(c[1])


def _states(mine, other) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
