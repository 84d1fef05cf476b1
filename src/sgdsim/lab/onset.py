"""When a late-comer's advantage sets in: the onset delay of the join boost, from a ramp run.

``examples/lab/incumbent.py`` runs one long transfer (the incumbent, logging its progress) and
starts transfers the same way beside it (the joiners). While both run, the joiner's share of
the link is 1 − the incumbent's rate over its rate alone. TCP's late-comer gets more than half
(finding 5), but not at once: it starts in slow start and first takes less (finding 8: 0.41-0.50
of the link in its first 50 ms on the lab). The simulator's model
(``sim/sharing/fair.py``) gives the joiner an equal share for ``join_delay_s``, then its boost.

``onset_delay`` fits that delay so that the joiner moves the bytes the model says by the end
of the window: with a plateau share s (the mean share once it has settled, from
``settled_s``) and the joiner's mean cumulative share C(t), the model's C(t) is
0.5·D + s·(t − D), so D = (s·t − C(t)) / (s − 0.5). Means, not medians: the model moves
bytes, and single arrivals are bimodal (some get half the link, some two thirds), which
makes a median jump between runs. Without an advantage (s ≤ 0.5 + ``MIN_ADVANTAGE``) there
is nothing to delay and it returns None; ``recorded_onset`` then gives the window as a lower
bound (pushes on the lab: no advantage within their overlaps, finding 8).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

MIN_ADVANTAGE = 0.03  # a plateau share this close to 0.5 is equal sharing within the noise


def joiner_shares(progress: np.ndarray, arrivals: list[tuple[float, float]], rate_Bps: float,
                  bin_s: float = 0.05, span_s: float = 1.0) -> np.ndarray:
    """(arrivals, bins) of the joiner's share of the link in bins after each arrival's start,
    NaN after it ended. ``progress``: the incumbent's (time_s, bytes) records."""
    at = lambda t: np.interp(t, progress[:, 0], progress[:, 1])  # noqa: E731
    edges = np.arange(0.0, span_s + 1e-9, bin_s)
    shares = np.full((len(arrivals), len(edges) - 1), np.nan)
    for k, (start, end) in enumerate(arrivals):
        for j, (a, b) in enumerate(zip(edges, edges[1:])):
            if start + b <= end:
                shares[k, j] = 1.0 - (at(start + b) - at(start + a)) / (rate_Bps * bin_s)
    return shares


def onset_delay(shares: np.ndarray, bin_s: float = 0.05, window_s: float = 0.5,
                settled_s: float = 0.2) -> float | None:
    """The model's delay (s) from the joiners' shares per bin (``joiner_shares``; the rows of
    several runs may be stacked)."""
    shares = np.atleast_2d(shares)
    n = int(round(window_s / bin_s))
    if not 0 <= settled_s < window_s or n > shares.shape[1] or np.isnan(shares[:, :n]).all(axis=0).any():
        raise ConfigError(f"the onset fit needs the joiners' shares over all of its {window_s:g} s "
                          f"window (settled from {settled_s:g} s): some bins have no transfer left")
    mean = np.nanmean(shares, axis=0)
    plateau = float(np.mean(mean[int(round(settled_s / bin_s)):n]))
    if plateau <= 0.5 + MIN_ADVANTAGE:
        return None
    moved = float(np.sum(mean[:n]) * bin_s)
    return max(0.0, (plateau * n * bin_s - moved) / (plateau - 0.5))


def recorded_onset(shares: np.ndarray, bin_s: float = 0.05, window_s: float = 0.5,
                   settled_s: float = 0.2) -> tuple[float, bool]:
    """(the delay to record, whether it is only a lower bound): without an advantage in the
    window the onset is at least the window."""
    delay = onset_delay(shares, bin_s, window_s, settled_s)
    return (window_s, True) if delay is None else (delay, False)
