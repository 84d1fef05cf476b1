"""Two regimes or one: splitting a handful of throughputs (replications, lab runs) in two.

Async workers fall into lock-step convoys or interleave, depending on how they started, and
stay there for a long time (docs/simulator.md). Independent runs of one configuration then
cluster around two values. ``split_modes`` finds the best split of the sorted values into a
low and a high group (least within-group squared error, exhaustive: the values are few) and
calls it bimodal when

- each group holds at least two values (one outlier is not a regime),
- the means differ by at least 3 % of the overall mean (a visible difference), and
- the gap between the means, over the pooled within-group standard deviation, exceeds what the
  best split of n values from *one* normal reaches in 0.5 % of samples (``MIN_SEPARATION``,
  by simulation, 40 000 samples per n). Choosing the best split makes even one normal look
  separated (Ashman's D > 2 then holds for 88 % of 8-value samples), hence the table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_REL_GAP = 0.03   # the means differ by at least 3 % of the overall mean
MIN_GROUP = 2        # values per group
# n -> 99.5th percentile of (gap / pooled sd) for the best split of n normal values
MIN_SEPARATION = {4: 24.0, 5: 15.2, 6: 11.3, 7: 9.1, 8: 7.9, 9: 7.1, 10: 6.6, 11: 6.2, 12: 5.9,
                  13: 5.7, 14: 5.5, 15: 5.3, 16: 5.2}


@dataclass(frozen=True)
class Regime:
    throughput: float  # mean of the group (examples/s)
    share: float       # fraction of the values in the group


def best_split(values) -> int:
    """Index k such that sorted(values)[:k] | [k:] has the least within-group squared error."""
    x = np.sort(np.asarray(values, float))
    n = len(x)
    if n < 2:
        return n
    c1, c2 = np.cumsum(x), np.cumsum(x ** 2)
    best_k, best_sse = n, math.inf
    for k in range(1, n):
        lo = c2[k - 1] - c1[k - 1] ** 2 / k
        hi = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
        if lo + hi < best_sse - 1e-12 * abs(c2[-1]):
            best_k, best_sse = k, lo + hi
    return best_k


def split_modes(values) -> tuple[Regime, Regime] | None:
    """(low, high) regimes when ``values`` are clearly bimodal, else None."""
    x = np.sort(np.asarray(values, float))
    n = len(x)
    if n < 2 * MIN_GROUP or not np.all(np.isfinite(x)):
        return None
    k = best_split(x)
    lo, hi = x[:k], x[k:]
    if min(len(lo), len(hi)) < MIN_GROUP:
        return None
    gap = float(hi.mean() - lo.mean())
    if gap <= MIN_REL_GAP * abs(float(x.mean())):
        return None
    pooled = math.sqrt(float(((lo - lo.mean()) ** 2).sum() + ((hi - hi.mean()) ** 2).sum()) / (n - 2))
    if pooled > 0 and gap / pooled <= MIN_SEPARATION.get(n, MIN_SEPARATION[16]):
        return None
    return Regime(float(lo.mean()), k / n), Regime(float(hi.mean()), (n - k) / n)
