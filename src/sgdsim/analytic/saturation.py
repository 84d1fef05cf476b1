"""Async PS beyond the knee: a link that never idles runs at its own rate.

Eq. 5's MVA assumes exponential service, so its throughput approaches the busiest link's rate
only as K/(K+1) does: at W >= 3 it was 3-15 % below what the lab's and the held-out torch
trainer's runs reach (docs/validation/coarse-saturation.md). A transfer of M bytes at a fixed
rate is nearly deterministic, and a cyclic network of deterministic stations runs at
min(K X(1), X_sat) (its asymptotic bounds are exact: Lazowska et al., Quantitative System
Performance, ch. 5). Near the knee N* = X_sat / X(1) real runs are bimodal and Eq. 5 stays;
from K >= N* + 1 on, one worker more than the links can serve keeps the busiest link's queue
from emptying, and the model answers X_sat: the busiest station's rate, the links slowed by the
share a NIC delivers with many transfers both ways (the hardware file's two-way rule). Between
N* and N* + 1 the answer moves linearly from Eq. 5 to that bound, so the curve has no jump.

One parameter server only: the shares were measured on one PS's NIC, and with several the
model's servers are visited in series (``service_row``), which has no such bound.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .coarse_profile import CoarseProfile
from .results import CoarseResult
from .two_way import TwoWay, saturated_shares

STATIONS = ("uplink", "update", "downlink")


def saturated_examples_s(c: CoarseProfile, link_s: float, two_way: TwoWay) -> tuple[float, dict]:
    """X_sat in examples/s and each station's service time per step at saturation (s):
    ``link_s`` = M/B, the links slowed by the two-way shares with many flows each way."""
    f_in, f_out = saturated_shares(two_way)
    S = dict(zip(STATIONS, (link_s / f_in, c.update_s, link_s / f_out)))
    busiest_s = max(S.values())
    return (c.batch_size / busiest_s if busiest_s > 0 else math.inf), S  # inf: nothing shared


def past_the_knee(results: list[CoarseResult], one: CoarseResult, c: CoarseProfile, link_s: float,
                  two_way: TwoWay) -> list[CoarseResult]:
    """Eq. 5's ``results`` (one per worker count) with the saturated links where they apply;
    ``one``: the model's answer at K = 1 (X(1), with Eq. 6 if it applies)."""
    X_sat, S = saturated_examples_s(c, link_s, two_way)
    if not math.isfinite(X_sat):
        return results
    return [_beyond_knee(r, one, c, X_sat, S) for r in results]


def _beyond_knee(r: CoarseResult, one: CoarseResult, c: CoarseProfile, X_sat: float,
                 S: dict) -> CoarseResult:
    """``r`` (Eq. 5 at K = r.workers) up to the knee N*, the saturated answer from N* + 1
    on, linear in K between them (so the curve has no jump), never below Eq. 5."""
    if r.throughput >= X_sat:
        return r
    K, knee = r.workers, X_sat / one.throughput
    share = min(1.0, K - knee)
    if share <= 0:
        return r
    if share < 1:
        X = r.throughput + share * (min(X_sat, K * one.throughput) - r.throughput)
        slow = r.throughput / X  # Little: the same K customers cycle faster
        return replace(r, throughput=X, step_time_s=r.step_time_s * slow,
                       response_time_s={k: v * slow for k, v in r.response_time_s.items()},
                       utilization={k: v / slow for k, v in r.utilization.items()},
                       regime=f"{r.regime}, {share:.0%} of the way to saturated links (N* = {knee:.2f})",
                       equations=r.equations + " + saturated links")
    steps_s = X_sat / (K * c.batch_size)  # each worker's steps/s
    busiest = max(S, key=S.get)
    T = {"compute": one.response_time_s["compute"]} | S
    T[busiest] = 1.0 / steps_s - sum(v for k, v in T.items() if k != busiest)  # its queue
    names = list(r.utilization)  # the worker, then STATIONS' as async_ps._result names them
    util = dict(zip(names, [steps_s * T["compute"]] + [K * steps_s * S[k] for k in STATIONS]))
    return replace(r, throughput=X_sat, step_time_s=K * c.batch_size / X_sat, response_time_s=T,
                   utilization=util, regime=f"saturated ({busiest} never idle: K >= N* + 1 = "
                   f"{knee + 1:.2f})", equations=r.equations + " + saturated links")
