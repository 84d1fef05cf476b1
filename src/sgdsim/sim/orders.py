"""Transmission orders of a worker's parameter transfers (``--order``, ICPE §3.3), one
function each, registered below: the rank of every op, one row per sampled order."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..profile.model import COMM, Profile
from ..spec.registries import ORDERS
from .dag import topological

N_RANDOM_ORDERS = 16  # distinct random transmission orders sampled per step


@dataclass(frozen=True)
class Order:
    name: str
    help: str
    rank: Callable  # (profile, succ, npred, rng) -> ranks (orders, ops)
    random: bool = False  # its ranks depend on the seed

    def ranks(self, profile, succ, npred, rng: np.random.Generator) -> np.ndarray:
        return self.rank(profile, succ, npred, rng)


def tic_keys(profile: Profile, succ: list[list[int]], npred: np.ndarray) -> np.ndarray:
    """TicTac-like priority: when the critical path first needs the op (ICPE §3.3).

    Earliest start times come from the DAG with mean compute durations and free
    communication; an op's key is the earliest start of its first dependent.
    """
    mean = profile.durations_s.mean(axis=0)
    dur = np.where([op.kind == COMM for op in profile.ops], 0.0, mean)
    est = np.zeros(profile.n_ops)
    for i in topological(npred, succ):
        for j in succ[i]:
            est[j] = max(est[j], est[i] + dur[i])
    return np.array([min((est[j] for j in succ[i]), default=est[i] + dur[i])
                     for i in range(profile.n_ops)])


def _profiled(profile, succ, npred, rng):
    return np.arange(profile.n_ops, dtype=np.float64)[None, :]


def _reverse(profile, succ, npred, rng):
    n = profile.n_ops
    return (n - np.arange(n, dtype=np.float64))[None, :]


def _tic(profile, succ, npred, rng):
    n = profile.n_ops
    keys = tic_keys(profile, succ, npred)
    return np.argsort(np.lexsort((np.arange(n), keys))).astype(np.float64)[None, :]


def _random(profile, succ, npred, rng):
    n = profile.n_ops
    return np.stack([rng.permutation(n).astype(np.float64) for _ in range(N_RANDOM_ORDERS)])


for _order in (Order("profiled", "as profiled", _profiled), Order("tic", "TicTac: critical path first", _tic),
               Order("reverse", "the profile's order reversed", _reverse),
               Order("random", f"{N_RANDOM_ORDERS} random orders, one drawn per step", _random, random=True)):
    ORDERS.register(_order.name, _order)

