"""Parameter servers with multi-device nodes (TPDS §4.4): local aggregation first.

After the node's G devices finish their backward pass they all-reduce their gradients over the
intra-node links; one device pushes the node's sum to the servers and pulls the new model,
which it broadcasts to the others. To the servers a node is one worker of G times the batch,
whose pushes wait for the local all-reduce and whose forward waits for the local broadcast.
Both are charged as time of the compute op next to the transfer (the one that produces a
push, the one that consumes a pull), as ``with_overhead`` charges parsing: the local
communicator runs one operation at a time, beside the step, not on the NIC.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..profile.model import COMM, COMPUTE, DOWNLINK, UPLINK, Profile
from ..profile.transforms import overhead_targets
from .collectives.ring import ring_call_s
from .model import Topology


def local_broadcast_s(size_bytes: float, topology: Topology) -> float:
    """A pipelined ring broadcast: the bytes once over the intra-node link, α per hop."""
    return size_bytes / topology.intra_Bps + (topology.gpus_per_node - 1) * topology.step_latency_s


def with_local_aggregation(profile: Profile, topology: Topology) -> Profile:
    """The profile of one node (see the module): batch × G, local all-reduce before each push,
    local broadcast after each pull."""
    G = topology.gpus_per_node
    if G == 1:
        return profile
    extra = np.zeros(profile.n_ops)
    idx = profile.index()
    for c, consumer in overhead_targets(profile):
        if profile.ops[c].resource == DOWNLINK:
            extra[consumer] += local_broadcast_s(profile.ops[c].size_bytes, topology)
    for i, op in enumerate(profile.ops):
        producers = [idx[d] for d in op.deps if profile.ops[idx[d]].kind == COMPUTE]
        if op.kind == COMM and op.resource == UPLINK and producers and op.size_bytes > 0:
            extra[max(producers)] += ring_call_s(op.size_bytes, G, topology.intra_Bps,
                                                 topology.step_latency_s)
    record = {"transform": "local_aggregation", "gpus_per_node": G,
              "intra_bandwidth_Bps": topology.intra_link_Bps, "added_s": float(extra.sum())}
    return replace(profile, job=replace(profile.job, batch_size=profile.job.batch_size * G),
                   durations_s=profile.durations_s + extra[None, :],
                   extra={**profile.extra, "transforms": [*profile.extra.get("transforms", []), record]})
