"""A measured two-way table and its corrections, as data: checked once, where they are read.

``table[d][n][m]``: the share of NIC direction d (0 out of the PS's host, 1 into it) with n
flows against m the other way (``netbench --lab --two-way``). The busy shares of training
traffic (``sgdsim.lab.busy``) replace its entries of 3 or more flows busy both ways
(``with_busy``). How the models use them: ``analytic/two_way.py``.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError

BUSY_FLOWS = 3  # from this many flows on a NIC busy both ways, the measured share is flat


def busy_share(share, flows: int) -> float:
    """A direction's busy share with ``flows`` >= ``BUSY_FLOWS`` transfers on the NIC: ``share``
    itself, or, for one share per flow count, the entry for ``flows`` (the last from there on)."""
    return share[min(flows - BUSY_FLOWS, len(share) - 1)] if isinstance(share, tuple) else share


def check_shape(shape, what: str = "two-way busy shape") -> float:
    """The exponent of the table's shape in the busy shares: a number in [0, 1], or one
    ConfigError line naming ``what``."""
    if isinstance(shape, bool) or not isinstance(shape, (int, float)) or not 0.0 <= shape <= 1.0:
        raise ConfigError(f"{what} must be a number in [0, 1], got {shape!r}")
    return float(shape)


def check_busy(share, what: str = "two-way busy share") -> float | tuple:
    """One busy share in (0, 1], or a non-empty sequence of them by flow count (as a tuple);
    anything else is one ConfigError line naming ``what``."""
    values = share if isinstance(share, (list, tuple)) else (share,)
    ok = len(values) > 0 and all(not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v <= 1
                                 for v in values)
    if not ok:
        raise ConfigError(f"{what} must be in (0, 1], or a list of such shares by flow count "
                          f"from {BUSY_FLOWS} on, got {share!r}")
    return tuple(float(v) for v in values) if isinstance(share, (list, tuple)) else float(share)


def with_busy(table, shares, shape: float = 0.0) -> tuple:
    """``table`` with every measured split of n >= 1 flows against m >= 1, n + m >=
    ``BUSY_FLOWS``, set to direction d's ``busy_share(shares[d], n + m)`` times the measured
    entry (capped at 1) to the power ``shape`` (None: that direction as measured). Shape 0 is
    one flat share for every split; 1 keeps the table's own shape, scaled."""
    t = [[list(row) for row in d] for d in check_table(table)]
    for d, share in enumerate(shares):
        if share is None:
            continue
        share = check_busy(share)
        for n, row in enumerate(t[d]):
            for m, v in enumerate(row):
                if n >= 1 and m >= 1 and n + m >= BUSY_FLOWS and v is not None:
                    row[m] = busy_share(share, n + m) * min(1.0, v) ** shape
    return check_table(t)


def check_table(table, what: str = "two-way table") -> tuple:
    """The table as nested tuples of floats (None where not measured), or one ConfigError line
    naming ``what`` (a hardware file names its field)."""
    try:
        t = np.array([[[math.nan if v is None else float(v) for v in row] for row in d]
                      for d in table], dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{what}: expected [direction][n][m] lists of shares "
                          "(null where not measured)") from None
    if t.ndim != 3 or t.shape[0] != 2 or t.shape[1] != t.shape[2] or t.shape[1] < 2:
        raise ConfigError(f"{what}: expected shape (2, N, N) with N >= 2, got {t.shape}")
    seen = t[:, 1:, :]
    if not np.isfinite(seen[:, :, 0]).all():
        raise ConfigError(f"{what}: every direction needs its share alone (m = 0) measured")
    bad = seen[np.isfinite(seen) & ~((seen > 0) & (seen <= 2))]
    if bad.size:
        raise ConfigError(f"{what}: shares must be in (0, 2], got {bad[0]:g}")
    n = np.arange(1, t.shape[1])[:, None] + np.arange(t.shape[1])[None, :]
    total = n[np.isfinite(seen).all(axis=0)].max()
    holes = np.argwhere(~np.isfinite(seen) & (n <= total)[None])
    if holes.size:
        d, i, j = holes[0]
        raise ConfigError(f"{what}: direction {d}, {i + 1} flows against {j} is missing "
                          f"or not a number, though splits of up to {total} flows were measured")
    return tuple(tuple(tuple(float(v) if math.isfinite(v) else None for v in row) for row in d)
                 for d in t)
