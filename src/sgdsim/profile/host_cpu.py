"""``Profile -> Profile`` transforms of the hosts' CPU per byte (``spec.Host``) for parameter
servers: what each end of a transfer pays, charged to a compute op at that end.

A transfer of S bytes costs the worker S·w of its compute (sending: the op that produced it;
receiving: the op that consumes it) and the server S·s of its CPU (receiving a push: the PS
op that consumes it, its update; sending a pull: a new PS op, ``SERVER_SUFFIX``, that runs
before it). Both the simulator and the coarse models read the transformed profile, so they
charge alike.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .model import COMM, COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Profile
from .transforms import successor_lists, with_virtual_ops

SERVER_SUFFIX = "~serve"  # id of the PS op that serialises a pull before it is sent


def with_server_ops(profile: Profile) -> Profile:
    """A PS op before every pull (it takes the pull's dependencies; the pull waits for it), and
    one after every push that no PS op consumes: where the server's CPU per byte lands.
    Zero-duration until ``with_host_cpu`` charges them; idempotent."""
    if any(op.id.endswith(SERVER_SUFFIX) for op in profile.ops):
        return profile
    consumed = {d for op in profile.ops if op.resource == PS for d in op.deps}
    ops, cols = [], []
    for i, op in enumerate(profile.ops):
        if op.kind == COMM and op.resource == DOWNLINK:
            serve = _server_op(op, op.deps)
            ops += [serve, replace(op, deps=(serve.id,))]
            cols += [-1, i]
            continue
        ops.append(op)
        cols.append(i)
        if op.kind == COMM and op.resource == UPLINK and op.id not in consumed:
            ops.append(_server_op(op, (op.id,)))
            cols.append(-1)
    return with_virtual_ops(profile, ops, cols, "server_ops")


def _server_op(transfer, deps: tuple[str, ...]):
    return replace(transfer, id=transfer.id + SERVER_SUFFIX, name=f"{transfer.name} (server CPU)",
                   kind=COMPUTE, resource=PS, deps=tuple(deps), size_bytes=0.0)


def host_targets(profile: Profile) -> list[tuple[int, int, int]]:
    """(transfer, its worker-side compute op, its server-side compute op) index triples; −1
    where that end has none. The worker side of a push is the last compute op it depends on,
    of a pull the first that depends on it; the server side of a push is the first PS op
    that depends on it, of a pull the PS op it depends on."""
    idx, succ = profile.index(), successor_lists(profile)
    out = []
    for i, op in enumerate(profile.ops):
        if op.kind != COMM:
            continue
        before = [idx[d] for d in op.deps if profile.ops[idx[d]].kind != COMM]
        after = [j for j in succ[i] if profile.ops[j].kind != COMM]

        def on(side, res):
            return [j for j in side if profile.ops[j].resource == res]

        if op.resource == UPLINK:
            worker, server = max(on(before, WORKER), default=-1), min(on(after, PS), default=-1)
        else:
            worker, server = min(on(after, WORKER), default=-1), max(on(before, PS), default=-1)
        out.append((i, worker, server))
    return out


def with_host_cpu(profile: Profile, worker_s_per_byte: float, server_s_per_byte: float) -> Profile:
    """Charge every transfer's S bytes: S·``worker_s_per_byte`` to its worker-side op and
    S·``server_s_per_byte`` to its server-side op (``host_targets``; ``with_server_ops`` first
    gives every transfer a server-side op). Nothing to charge: the profile itself."""
    if worker_s_per_byte == 0 and server_s_per_byte == 0:
        return profile
    extra = np.zeros(profile.n_ops)
    for c, worker, server in host_targets(profile):
        size = profile.ops[c].size_bytes
        if worker >= 0:
            extra[worker] += size * worker_s_per_byte
        if server >= 0:
            extra[server] += size * server_s_per_byte
    record = {"transform": "host_cpu", "worker_s_per_byte": worker_s_per_byte,
              "server_s_per_byte": server_s_per_byte}
    return replace(profile, durations_s=profile.durations_s + extra[None, :],
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})
