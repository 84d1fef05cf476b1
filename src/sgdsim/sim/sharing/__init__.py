"""Bandwidth sharing policies of a link: one small module each, registered below.

A policy sets ``rate[l]`` (bytes/s per unit weight) and the weight of each flow when flows
arrive (``admit``) or leave (``release``). Policies must keep the total served rate
``rate * sum(weights)`` at or below the link bandwidth and every flow at or below the cap.

Each registered name is a ``Sharing``: what the engine runs (``code``, ``links.py``), or the
runs it mixes, and what the coarse models make of it. A new policy is one module here and one
``SHARINGS.register`` line.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...spec.registries import SHARINGS

PS, FCFS = 0, 1  # the engine's policy codes (links.py)


@dataclass(frozen=True)
class Sharing:
    """``fcfs_weight``: the FCFS part of the coarse sync model's uplink term, (1 − w)·PS +
    w·FCFS (None: the cluster's ``fcfs_weight``); ``queue``: the coarse async model's MVA
    station discipline (``analytic/mva.py``; None: Eq. 5 picks one by utilization);
    ``runs``: a mix is the weighted mean of these runs (TPDS Eq. 9); ``code``: the engine's
    policy of a single run."""

    name: str
    help: str
    code: int | None
    fair: bool  # flows share by weight: TCP's dynamics (late-comer, stalls) apply
    fcfs_weight: float | None
    queue: str | None
    sync_eq: str = ""  # TPDS equation of the coarse sync PS model
    runs: tuple[str, ...] = ()
    simulated: bool = True


for policy in (
    Sharing("ps", "processor sharing: equal shares (TPDS PS, ICPE 1/n)", PS, True, 0.0, "ps", "7"),
    Sharing("fcfs", "first come first served: the earliest flow gets the bandwidth", FCFS, False,
            1.0, "fcfs", "8"),
    Sharing("hybrid", "(1 - w)·ps + w·fcfs, the mean of two runs (TPDS Eq. 9)", None, False, None,
            None, "9", runs=("ps", "fcfs")),
    Sharing("threshold", "the coarse async model's Eq. 5: fcfs below a utilization, else ps",
            None, True, None, None, simulated=False),
):
    SHARINGS.register(policy.name, policy)
