"""How two workers on one host slow each other's compute and transfers, from traced pairs.

The lab runs every namespace on one 2-core machine, so a worker's compute and the other
worker's transfers compete for the same cores (docs/validation/regimes/, finding 12). Per
leg of a step, least squares of its time on the seconds it overlapped each activity of the
other worker: the coefficient is the slowdown per second of that overlap (0.08: 8 % longer
while it lasts). A transfer's time is first put under equal sharing of its link
(``equal_share_s``), so that the other's same-direction transfer is not counted as a slowdown.

Steps are ``[((pull_start, pull_end), (push_start, push_end)), ...]`` per worker, as
``validate.regimes.step_transfers`` gives them; compute is a step's pull end to push start.
"""
from __future__ import annotations

import numpy as np

from .regimes import least_squares

# leg: (what of the other worker it is regressed on), in the order of the coefficients
REGRESSORS = {"compute": ("other pulls", "other pushes"),
              "pull": ("other computes", "other pushes"),
              "push": ("other computes", "other pulls")}


def equal_share_s(interval, same_direction) -> float:
    """The time ``interval``'s transfer took in units of its link alone under equal sharing:
    ∫ dt / n(t), n counting it and the ``same_direction`` transfers running with it."""
    s, e = interval
    cuts = sorted({s, e, *(t for a, b in same_direction for t in (a, b) if s < t < e)})
    total = 0.0
    for t0, t1 in zip(cuts, cuts[1:]):
        mid = (t0 + t1) / 2
        total += (t1 - t0) / (1 + sum(1 for a, b in same_direction if a < mid < b))
    return total


def _overlap(a: float, b: float, spans) -> float:
    return sum(max(0.0, min(b, d) - max(a, c)) for c, d in spans)


def _rows(mine, other) -> dict[str, list]:
    pulls, pushes = [s[0] for s in other], [s[1] for s in other]
    computes = [(s[0][1], s[1][0]) for s in other]
    rows: dict[str, list] = {leg: [] for leg in REGRESSORS}
    for pull, push in mine:
        c0, c1 = pull[1], push[0]
        rows["compute"].append((c1 - c0, _overlap(c0, c1, pulls), _overlap(c0, c1, pushes)))
        rows["pull"].append((equal_share_s(pull, pulls), _overlap(*pull, computes), _overlap(*pull, pushes)))
        rows["push"].append((equal_share_s(push, pushes), _overlap(*push, computes), _overlap(*push, pulls)))
    return rows


def coupling(runs) -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
    """Per leg (``REGRESSORS``): (coefficients [intercept s, per second of each overlap],
    their standard errors, steps), over every worker of the traced ``runs`` (each ``{rank:
    steps}``). With more than two workers "the other" is all the others: their overlaps add
    up (seconds times workers)."""
    rows: dict[str, list] = {leg: [] for leg in REGRESSORS}
    for run in runs:
        for w, mine in run.items():
            others = [s for v, steps in run.items() if v != w for s in steps]
            for leg, r in _rows(mine, others).items():
                rows[leg].extend(r)
    out = {}
    for leg, r in rows.items():
        a = np.asarray(r, float).reshape(-1, 3)
        coef, se, _ = least_squares(a[:, 0], a[:, 1:])
        out[leg] = (coef, se, len(a))
    return out
