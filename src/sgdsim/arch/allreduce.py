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
    servers = False
    pulls = False
    parse_in_call = True  # each ring step reduces what it received before it forwards it
    tcp_dynamics = False
    per_node_workers = False

    def default_sharing(self, mode: str) -> str:
        return "ps"  # a call is exclusive to its communicator: no link is shared

    def label(self, mode: str, ps_count: int | None) -> str:
        return self.name

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        return np.full(resources, -1, np.int64)  # a call is exclusive to its worker's communicator

    def res_shared(self, resources: int, servers: int, host) -> np.ndarray:
        return np.zeros(resources, np.int64)

    def host_ops(self, profile, host):
        return profile

    def charge_host(self, profile, host):
        return profile  # a call's host CPU is part of its time (transfer_durations)

    def prepare(self, profile, config):
        if config.strategy.bucket_size_bytes is not None:
            profile = with_buckets(profile, config.strategy.bucket_size_bytes)
        if config.cluster.nodes.allreduce_compute_share > 0:
            profile = with_allreduce_compute(profile)
        return profile

    def transfer_durations(self, rows, ref, workers, config, link_Bps) -> None:
        sizes = np.array([op.size_bytes for op in ref.ops])
        is_up = np.array([op.resource == UPLINK for op in ref.ops])
        rows[:, is_up] = allreduce_s(config.strategy.collective, sizes[is_up], workers, config.topology(link_Bps))
        rows[:, [op.resource == DOWNLINK for op in ref.ops]] = 0.0  # no pulls
        virtual, call = allreduce_compute_pairs(ref)
        rows[:, virtual] = config.cluster.nodes.allreduce_compute_share * rows[:, call]
        rows[:, is_up] += config.cluster.host.allreduce_s(sizes[is_up], workers)  # the ring waits on the CPU
        rows[:, is_up] += config.cluster.link.ring_parse_s(sizes[is_up], workers)

    def coarse(self, classes, strategy, cluster, fractions):
        from ..analytic.sync import ring_allreduce  # see ps.py

        classes = slowed_classes(classes, cluster.nodes.host_cores)
        return ring_allreduce(classes, cluster.link.bandwidth_Bps, step_latency_s=cluster.link.step_latency_s,
                              compute_share=cluster.nodes.allreduce_compute_share,
                              collective=strategy.collective, gpus_per_node=cluster.nodes.gpus_per_node,
                              intra_bandwidth_Bps=cluster.nodes.intra_bandwidth_Bps,
                              bucket_size_bytes=strategy.bucket_size_bytes, host=cluster.host,
                              link=cluster.link)
