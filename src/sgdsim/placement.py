"""Where a model's layers live when several parameter servers share it (ICPE §5).

One rule for the simulator (``sim.plan.assign_ps``) and the lab's real parameter servers
(``lab.train.models.shard_of``), so a validation run places bytes exactly as the prediction.
"""
from __future__ import annotations


def least_loaded(layer_bytes: dict[str, float], ps_count: int) -> dict[str, int]:
    """Each layer, in order, to the PS holding the fewest bytes so far (ties: the lowest index)."""
    load = [0.0] * ps_count
    owner: dict[str, int] = {}
    for layer, size in layer_bytes.items():
        p = min(range(ps_count), key=lambda i: (load[i], i))
        owner[layer] = p
        load[p] += size
    return owner
