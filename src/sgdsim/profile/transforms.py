"""``Profile -> Profile`` transforms: what a standalone profile misses, added with provenance.

Every model reads the same transformed profile, so a calibration (``sgdsim calibrate``) or a
``--overhead-alpha/--overhead-beta`` reaches the simulator, the TPDS models and the baselines
alike. Each transform appends a record to ``profile.extra["transforms"]``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConfigError
from .model import COMM, DOWNLINK, Profile


def overhead_targets(profile: Profile) -> list[tuple[int, int]]:
    """(comm op, first compute op that depends on it) pairs: where its parsing cost lands."""
    idx = profile.index()
    succ: list[list[int]] = [[] for _ in profile.ops]
    for i, op in enumerate(profile.ops):
        for d in op.deps:
            succ[idx[d]].append(i)
    pairs = []
    for i, op in enumerate(profile.ops):
        if op.kind == COMM:
            comp = [j for j in succ[i] if profile.ops[j].kind != COMM]
            if comp:
                pairs.append((i, min(comp)))
    return pairs


def with_overhead(profile: Profile, alpha_s_per_byte: float, beta_s: float,
                  arch: str = "ps", source: str = "--overhead-alpha/--overhead-beta") -> Profile:
    """Charge ``α·size + β`` per message to the compute op that consumes it (ICPE §3.2.1:
    deserialising received tensors is CPU work of the receiver, not link time). All-reduce
    has no downlink transfers, so nothing is charged for them."""
    if not (alpha_s_per_byte >= 0 and beta_s >= 0):
        raise ConfigError(f"overheads must be non-negative, got alpha {alpha_s_per_byte}, beta {beta_s}")
    if alpha_s_per_byte == 0 and beta_s == 0:
        return profile
    extra = np.zeros(profile.n_ops)
    for c, t in overhead_targets(profile):
        if arch == "allreduce" and profile.ops[c].resource == DOWNLINK:
            continue
        extra[t] += alpha_s_per_byte * profile.ops[c].size_bytes + beta_s
    record = {"transform": "overhead", "alpha_s_per_byte": alpha_s_per_byte, "beta_s": beta_s,
              "arch": arch, "source": source}
    return replace(profile, durations_s=profile.durations_s + extra[None, :],
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})
