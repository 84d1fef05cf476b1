"""What a transfer loses when one starts the other way after it: the joined share.

``examples/lab/incumbent.py rounds`` runs a transfer (the incumbent, logging its progress)
and, a little later, one the other way from another host (the arrival), as a worker's pull
and another worker's push meet in training. On the lab a pull that a push joins keeps its
rate for about 0.4 s, then loses more and more of it while the push runs (0.6 of the link
after a second) and recovers at once when the push ends; the push loses nothing, and a pull
that joins a running push loses nothing either (docs/validation/regimes/, finding 9).

The simulator's model (``sim/sharing/fair.py``) is a step: the table's share until
``after_s`` after the join, then ``share``. ``fit_joined`` fits that step to the mean share
curve by least squares (``share`` is then the curve's mean after the step, so the bytes
moved after it are kept). The decline goes on as long as the overlap does, so the fit
depends on the span: measure with the job's transfer size (the span is the arrival's time).
The joined pulls differ from one another (after 0.25-1.0 s, then 0.48-0.84 at 200 Mbit/s);
``fit_each`` fits each alone, and the model draws one of those per join.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .onset import joiner_shares


def incumbent_shares(blocks, arrivals, rate_Bps: float, span_s: float,
                     bin_s: float = 0.05) -> np.ndarray:
    """(arrivals, bins): the incumbent's rate over ``rate_Bps`` in bins after each arrival's
    start, for arrivals whose span the incumbent and the arrival both cover. ``blocks``:
    each incumbent transfer's (start, array of (time, bytes done)); ``arrivals``: (start, end)."""
    if not (rate_Bps > 0 and span_s > 0 and 0 < bin_s <= span_s):
        raise ConfigError("incumbent shares need a positive rate, span and bin no longer than the span")
    rows = []
    for a0, a1 in arrivals:
        for start, prog in blocks:
            if a1 >= a0 + span_s and start <= a0 and prog[-1, 0] >= a0 + span_s:
                # the bins of the same-way joiner's share (lab.onset), of which this is the rest
                progress = np.vstack([[start, 0.0], prog])
                rows.append(1.0 - joiner_shares(progress, [(a0, a0 + span_s)], rate_Bps, bin_s, span_s)[0])
    return np.array(rows).reshape(len(rows), int(round(span_s / bin_s)))


def fit_joined(shares: np.ndarray, table_share: float, bin_s: float = 0.05) -> tuple[float, float]:
    """(after_s, share) of the step that fits the mean curve of ``shares`` best: the table's
    share before ``after_s``, ``share`` from then on."""
    if shares.size == 0:
        raise ConfigError("no arrival overlaps an incumbent for the whole span: a shorter span, "
                          "or files of one run each (incumbent, arrivals)")
    curve = shares.mean(axis=0)
    best = (np.inf, 0.0, 1.0)
    for k in range(len(curve)):
        share = float(curve[k:].mean())
        sse = float(((curve[:k] - table_share) ** 2).sum() + ((curve[k:] - share) ** 2).sum())
        if sse < best[0] - 1e-12:
            best = (sse, k * bin_s, share)
    return best[1], min(1.0, best[2])


def fit_each(shares: np.ndarray, table_share: float, bin_s: float = 0.05) -> list[tuple[float, float]]:
    """``fit_joined`` of each arrival's curve alone: the (after_s, share) pairs the simulator
    draws one of per join (``sharing/fair.py`` ``draw_joined``), as the lab's differ."""
    return [fit_joined(row[None, :], table_share, bin_s) for row in shares]
