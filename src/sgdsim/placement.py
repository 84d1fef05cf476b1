"""Where a model's layers live when several parameter servers share it (ICPE §5).

One rule for the simulator (``sim.plan.assign_ps``), the coarse model (``ps_fractions``) and
the lab's real parameter servers (``lab.train.models.shard_of``), so a validation run places
bytes exactly as the prediction.
"""
from __future__ import annotations

from .profile.model import DOWNLINK, Profile


def least_loaded(layer_bytes: dict[str, float], ps_count: int) -> dict[str, int]:
    """Each layer, in order, to the PS holding the fewest bytes so far (ties: the lowest index)."""
    load = [0.0] * ps_count
    owner: dict[str, int] = {}
    for layer, size in layer_bytes.items():
        p = min(range(ps_count), key=lambda i: (load[i], i))
        owner[layer] = p
        load[p] += size
    return owner


def layer_bytes(profile: Profile) -> dict[str, float]:
    """Bytes pulled per layer and step, in profile order."""
    out: dict[str, float] = {}
    for op in profile.ops:
        if op.resource == DOWNLINK:
            out[op.layer] = out.get(op.layer, 0.0) + op.size_bytes
    return out


def ps_fractions(profile: Profile, ps_count: int | None) -> tuple[float, ...]:
    """Each PS's share of the model's bytes: by ``least_loaded`` over ``ps_count`` servers, or
    (None) by the profile's own placement."""
    sizes = layer_bytes(profile)
    if ps_count is None:
        owner_of = {op.layer: op.ps for op in profile.ops if op.resource == DOWNLINK}
        ps_count = max([profile.ps_count, *[p + 1 for p in owner_of.values()]])
    else:
        owner_of = least_loaded(sizes, ps_count)
    load = [0.0] * ps_count
    for layer, size in sizes.items():
        load[owner_of[layer]] += size
    total = sum(load)
    return tuple(x / total for x in load) if total > 0 else (1.0,) + (0.0,) * (ps_count - 1)
