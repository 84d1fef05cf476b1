"""Which mode values of an operator type have no backward at all (a call without a gradient,
dropout's mask): the estimator gives their calls 0 s backward, whatever it learned.

A value is taken only where its rows' zeros are its own. A 30-shape grid that drew ``add``
only without a gradient had every add's backward at 0 s, and under the first rule (every
value all of whose rows have no backward) the models' adds with a gradient were then given
none: 34 % of the README's 30-shape grids and 74 % of its 10-shape ones gave some call with a
gradient 0 s so (docs/ops-runs.md, runs 27 and 28).
"""
from __future__ import annotations

from ..optypes.base import GRAD_FLAGS
from .features import Layout


def zero_bwd_modes(records, layout: Layout) -> tuple[tuple[str, str], ...]:
    """Mode values under which every backward is 0 (and at least one row has that value), but
    for one whose rows are all among another such value's, and fewer: their zeros are that
    value's. Of values with the same rows, a gradient flag at 0 (``GRAD_FLAGS``) is taken alone
    where there is one: without a gradient there is no backward, so it explains them (a
    10-shape grid that drew every in-place call without a gradient, and every call without one
    in place, gave ResNet-50's in-place residual adds 0 s, run 28's s36); others all stay."""
    found: dict[tuple[str, str], frozenset] = {}
    for name, values in layout.modes:
        for v in values:
            rows = frozenset(i for i, r in enumerate(records) if str(r.params[name]) == v)
            if rows and len(rows) < len(records) and all(records[i].bwd_s == 0 for i in rows):
                found[(name, v)] = rows
    kept = {k: rows for k, rows in found.items() if not any(rows < other for other in found.values())}
    return tuple(k for k, rows in kept.items() if _flag(k) or not any(
        _flag(other) and kept[other] == rows for other in kept))


def _flag(mode: tuple[str, str]) -> bool:
    return mode[0] in GRAD_FLAGS and mode[1] == "0"
