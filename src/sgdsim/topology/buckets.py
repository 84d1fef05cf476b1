"""PyTorch DDP's gradient buckets as a ``Profile -> Profile`` transform.

DDP groups gradients into buckets in reverse registration order (the order in which backward
produces them), closing a bucket once it holds at least its cap: 1 MiB for the first
(``dist._DEFAULT_FIRST_BUCKET_BYTES``), ``bucket_cap_mb`` (25 MiB) after. A bucket's
all-reduce starts when all its gradients are ready; buckets go through the communicator one
at a time, in order; the optimizer step waits for the last. The unit here is a profile's
layer (its gradients' push op), not a single tensor: a layer's weight and bias share a bucket.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConfigError
from ..profile.model import COMM, UPLINK, Op, Profile
from ..profile.transforms import take_columns

DDP_FIRST_BUCKET_BYTES = 1024 * 1024
BUCKET_PREFIX = "bucket:"


def bucket_sizes(sizes_bytes, cap_bytes: float, first_cap_bytes: float = DDP_FIRST_BUCKET_BYTES) -> list[list[int]]:
    """Indices of ``sizes_bytes`` (in gradient-ready order) per bucket, DDP's rule: add, then
    close the bucket once it holds at least its cap."""
    if not cap_bytes > 0:
        raise ConfigError(f"--bucket-size must be positive, got {cap_bytes:g} bytes")
    buckets: list[list[int]] = [[]]
    held, cap = 0.0, min(first_cap_bytes, cap_bytes)
    for i, size in enumerate(sizes_bytes):
        buckets[-1].append(i)
        held += size
        if held >= cap:
            buckets.append([])
            held, cap = 0.0, cap_bytes
    return [b for b in buckets if b]


def _pushes_in_ready_order(profile: Profile) -> list[int]:
    """Gradient pushes (uplink comm ops), last registered layer first."""
    first_seen: dict[str, int] = {}
    for i, op in enumerate(profile.ops):
        first_seen.setdefault(op.layer, i)
    pushes = [i for i, op in enumerate(profile.ops) if op.kind == COMM and op.resource == UPLINK]
    return sorted(pushes, key=lambda i: -first_seen[profile.ops[i].layer])


def with_buckets(profile: Profile, cap_bytes: float,
                 first_cap_bytes: float = DDP_FIRST_BUCKET_BYTES) -> Profile:
    """One all-reduce call per bucket instead of one per layer (see the module's rules)."""
    if any(op.id.startswith(BUCKET_PREFIX) for op in profile.ops):
        return profile
    pushes = _pushes_in_ready_order(profile)
    if not pushes:
        return profile
    groups = [[pushes[j] for j in b] for b in
              bucket_sizes([profile.ops[i].size_bytes for i in pushes], cap_bytes, first_cap_bytes)]
    ids = [f"{BUCKET_PREFIX}{k}" for k in range(len(groups))]
    bucket_of = {i: k for k, g in enumerate(groups) for i in g}
    last_id = ids[-1]
    push_ids = {profile.ops[i].id for i in pushes}
    ops: list[Op] = []
    cols: list[int] = []
    for i, op in enumerate(profile.ops):
        k = bucket_of.get(i)
        if k is None:  # the optimizer waits for the last bucket
            deps = tuple(dict.fromkeys(last_id if d in push_ids else d for d in op.deps))
            ops.append(replace(op, deps=deps))
            cols.append(i)
        elif i == max(groups[k]):  # the bucket takes the place of its last member
            ops.append(_bucket_op(profile, groups[k], ids[k], ids[k - 1] if k else None))
            cols.append(-1)
    take = np.array(cols)
    record = {"transform": "buckets", "cap_bytes": cap_bytes, "first_cap_bytes": first_cap_bytes,
              "buckets": len(groups), "layers": len(pushes)}
    return replace(profile, ops=tuple(ops), durations_s=take_columns(profile.durations_s, take, 0.0),
                   comm_s=take_columns(profile.comm_s, take, np.nan),
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})


def _bucket_op(profile: Profile, members: list[int], op_id: str, previous: str | None) -> Op:
    first = profile.ops[members[0]]
    deps = [d for i in members for d in profile.ops[i].deps] + ([previous] if previous else [])
    return replace(first, id=op_id, name=f"bucket {op_id.removeprefix(BUCKET_PREFIX)} "
                   f"({len(members)} layers)", deps=tuple(dict.fromkeys(deps)),
                   size_bytes=float(sum(profile.ops[i].size_bytes for i in members)))


def even_buckets(model_bytes: float, cap_bytes: float,
                 first_cap_bytes: float = DDP_FIRST_BUCKET_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Buckets of a model known only by its size (the coarse model): the first of
    ``first_cap_bytes``, full buckets of ``cap_bytes``, the rest. Returns (sizes, counts), so
    that a 1 PB model in 1 B buckets costs three entries, not 10^15."""
    if not cap_bytes > 0:
        raise ConfigError(f"--bucket-size must be positive, got {cap_bytes:g} bytes")
    first = min(first_cap_bytes, cap_bytes, model_bytes)
    rest = model_bytes - first
    full = np.floor(rest / cap_bytes)
    tail = rest - full * cap_bytes
    return np.array([first, cap_bytes, tail]), np.array([1.0 if first > 0 else 0.0, full, 1.0 if tail > 0 else 0.0])
