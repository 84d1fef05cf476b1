"""All-reduce (TPDS §3.2.2; issue 12): no servers; each layer's gradients, or each DDP bucket,
is one collective call over every device, timed by the topology's collective."""
from __future__ import annotations

import numpy as np

from ..profile.model import DOWNLINK, UPLINK
from ..profile.transforms import allreduce_compute_pairs, with_allreduce_compute
from ..topology import allreduce_s, slowed_classes, with_buckets


class AllReduce:
    name = "allreduce"
    help = "all-reduce over every device (sync only)"
    modes = ("sync",)
    options = ("collective", "bucket_size", "ring_latency", "allreduce_compute_share")

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        return np.full(resources, -1, np.int64)  # a call is exclusive to its worker's communicator

    def prepare(self, profile, config):
        if config.bucket_size_bytes is not None:
            profile = with_buckets(profile, config.bucket_size_bytes)
        if config.allreduce_compute_share > 0:
            profile = with_allreduce_compute(profile)
        return profile

    def transfer_durations(self, rows, ref, workers, config, link_Bps) -> None:
        sizes = np.array([op.size_bytes for op in ref.ops])
        is_up = np.array([op.resource == UPLINK for op in ref.ops])
        rows[:, is_up] = allreduce_s(config.collective, sizes[is_up], workers, config.topology(8.0 * link_Bps))
        rows[:, [op.resource == DOWNLINK for op in ref.ops]] = 0.0  # no pulls
        virtual, call = allreduce_compute_pairs(ref)
        rows[:, virtual] = config.allreduce_compute_share * rows[:, call]

    def coarse(self, classes, strategy, cluster, fractions):
        from ..analytic.sync import ring_allreduce  # see ps.py

        classes = slowed_classes(classes, cluster.host_cores)
        return ring_allreduce(classes, cluster.bandwidth_bps, step_latency_s=cluster.ring_latency_s,
                              compute_share=cluster.allreduce_compute_share,
                              collective=strategy.collective, gpus_per_node=cluster.gpus_per_node,
                              intra_bandwidth_bps=cluster.intra_bandwidth_bps,
                              bucket_size_bytes=strategy.bucket_size_bytes)
