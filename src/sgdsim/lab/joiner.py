"""A TCP flow that joins a busy link: the late-comer's advantage, fitted from two-pull rounds.

Measured with ``examples/lab/joiner.py`` (docs/validation/regimes/, finding 5): two hosts pull
the same number of bytes from a third, the second starting δ after the first. Equal sharing
ends the second δ after the first. On the lab's token buckets the late pull gets more than
half of the link once the first has run past its start-up (the incumbent has met its first
losses and backed off; the joiner is still probing), so the two end closer than δ and async
workers drift into lock-step.

The model (``sim/sharing/fair.py``): a flow that joins while the youngest flow on the link
has run at least ``after_s`` gets weight ``boost``, the others 1, until the next arrival. For
two pulls of one lone-transfer time T each, it gives the ends in closed form
(``two_flow_ends``); ``fit_join`` picks the (boost, after_s) whose ends best match the rounds'
measured end_B − end_A in the least-squares sense.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

BOOSTS = np.round(np.arange(1.0, 4.0001, 0.01), 2)  # the grid fit_join searches


@dataclass(frozen=True)
class JoinFit:
    boost: float  # the joiner's weight against 1 for the incumbent
    after_s: float  # the incumbent's age from which it applies
    rms_gap_s: float  # root mean square of the fit's end_B − end_A error over the rounds
    equal_rms_gap_s: float  # the same for equal sharing (boost 1)


def two_flow_ends(lone_s: float, delta_s: float, boost: float) -> tuple[float, float]:
    """Ends of pull A (starts at 0) and pull B (starts at δ), each T = ``lone_s`` alone, when
    B gets ``boost`` times A's weight while both run (work-conserving)."""
    if delta_s >= lone_s:
        return lone_s, delta_s + lone_s
    phi = boost / (1.0 + boost)  # B's share of the link while both run
    left_a = lone_s - delta_s
    t_a, t_b = left_a / (1.0 - phi), lone_s / phi
    if t_a <= t_b:  # A ends first; B finishes its remainder alone
        return delta_s + t_a, delta_s + t_a + lone_s - phi * t_a
    return delta_s + t_b + left_a - (1.0 - phi) * t_b, delta_s + t_b


def fit_join(rounds: list[tuple[float, float]], lone_s: float) -> JoinFit:
    """(boost, after_s) from rounds of (δ, measured end_B − end_A), both in seconds.

    ``after_s`` is searched at 0 and halfway between consecutive measured offsets (the rounds
    cannot place it closer than that), ``boost`` on a 0.01 grid from 1 to 4.
    """
    if not rounds or not lone_s > 0:
        raise ConfigError("fit_join needs at least one round and a positive lone transfer time")
    deltas = np.array([d for d, _ in rounds], float)
    gaps = np.array([g for _, g in rounds], float)
    offsets = np.unique(deltas)
    candidates = [0.0] + [float(a + b) / 2 for a, b in zip(offsets[:-1], offsets[1:])]
    model = {k: np.array([np.subtract(*two_flow_ends(lone_s, d, k)[::-1]) for d in offsets])
             for k in BOOSTS}
    index = np.searchsorted(offsets, deltas)
    best = None
    for after_s in candidates:
        boosted = deltas >= after_s
        for k in BOOSTS:
            predicted = np.where(boosted, model[k][index], model[1.0][index])
            err = float(np.sqrt(np.mean((predicted - gaps) ** 2)))
            if best is None or err < best[0] - 1e-12:
                best = (err, float(k), after_s)
    equal = float(np.sqrt(np.mean((model[1.0][index] - gaps) ** 2)))
    return JoinFit(boost=best[1], after_s=best[2], rms_gap_s=best[0], equal_rms_gap_s=equal)
