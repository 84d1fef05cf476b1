"""Workers that share one host's cores (the lab: every namespace on one 2-core VM).

In synchronous training the workers compute at about the same time (the step's barrier, or
the all-reduce calls that keep the ranks in lock-step), so W workers on K shared cores each run
at K/W of a core while W > K: compute takes max(1, W/K) times its profiled duration. That is
the coarse model's stretch and the simulator's for ranks simulated once; the simulator,
simulating each worker, shares the cores among those computing at each moment instead
(``shared_cores``; ``sim/contention.py``), since sync PS workers whose pulls end at different
times compute partly apart. 8
all-reduce ranks of the lab's 10 MB CNN at batch 32 compute 8 × 73 ms at once on 2 cores:
292 ms instead of 73 on a ~2 s step (docs/validation/README.md). Asynchronous workers compute
at different times, so their compute-against-compute contention is not modelled (on most of
the lab's async cases a worker computes 1–6 % of the time).

Asynchronous workers on one host slow each other another way: one's compute runs while
another's transfers move bytes through the same cores (the lab's 10 MB CNN: +7.8 % per
second of another worker's pull, +2.0 % of its push; docs/validation/regimes/, findings 12
and 13). ``host_contention`` (pulls, pushes) is that slowdown per other worker transferring:
the engine runs a compute op at speed 1 / (1 + a·pulling + b·pushing) and re-times it when
transfers start or end (``sim/engine.py``). When pulls slow compute more than pushes do,
it draws a pair that drifts apart back together: the worker ahead computes while the other
still pulls, the one behind while the other pushes.
"""
from __future__ import annotations

import dataclasses


SHARED_CORES_MAX_WORKERS = 16  # each compute start and end re-times every running one: O(W)


def shared_cores(workers: int, simulated: int, host_cores: int | None, mode: str) -> int:
    """K when the simulator shares the host's K cores among the workers computing at each
    moment (``sim/contention.py``): synchronous workers outnumbering the cores, each simulated
    (a job whose identical ranks are simulated once cannot see who computes; it keeps
    ``compute_slowdown``, exact for ranks in lock-step); else 0. Beyond
    ``SHARED_CORES_MAX_WORKERS`` on one host it is 0 too: the re-timing would cost O(W²) a step
    (ResNet-50, 2 cores: W = 32 took 2.2 s against 0.8 s; W = 256, 123 s against 4.7 s), and
    with eight or more workers per core their computes overlap almost entirely anyway."""
    if (host_cores is None or mode != "sync" or not host_cores < workers <= SHARED_CORES_MAX_WORKERS
            or simulated != workers):
        return 0
    return host_cores


def compute_slowdown(workers: int, host_cores: int | None, mode: str) -> float:
    """The factor on every worker's compute: max(1, W/K) when W synchronous workers share K cores."""
    if host_cores is None or mode != "sync":
        return 1.0
    return max(1.0, workers / host_cores)


def slowed_classes(classes, host_cores: int | None):
    """Synchronous coarse worker classes ``[(CoarseProfile, count)]``, their forward and
    backward stretched by ``compute_slowdown``."""
    factor = compute_slowdown(sum(n for _, n in classes), host_cores, "sync")
    if factor == 1.0:
        return classes
    return [(dataclasses.replace(c, forward_s=c.forward_s * factor, backward_s=c.backward_s * factor), n)
            for c, n in classes]
