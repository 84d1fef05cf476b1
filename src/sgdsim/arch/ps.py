"""Parameter servers (ICPE, TPDS §3.1): each server's downlink and uplink are shared links."""
from __future__ import annotations

import numpy as np

from ..profile.host_cpu import with_host_cpu, with_server_ops
from ..spec import SHARINGS
from ..topology import slowed_classes

TCP_OPTIONS = ("join_boost", "join_after", "join_delay", "stall_prob", "stall_mean", "stall_incumbent",
               "stall_incumbent_mean", "host_contention")


class ParameterServers:
    name = "ps"
    help = "parameter servers"
    modes = ("async", "sync")
    options = ("sharing", "streams", "order", "ps_count", *TCP_OPTIONS)
    servers = True
    pulls = True
    parse_in_call = False
    tcp_dynamics = True
    per_node_workers = True

    def default_sharing(self, mode: str) -> str:
        return "hybrid" if mode == "sync" else "ps"  # TPDS §3.1.1

    def label(self, mode: str, ps_count: int | None) -> str:
        n = ps_count or 1
        return f"{mode}-{self.name}" + (f"/{n}" if n > 1 else "")

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        link = np.full(resources, -1, np.int64)
        for p in range(servers):  # link 2p is server p's downlink, 2p+1 its uplink
            link[1 + 3 * p], link[2 + 3 * p] = 2 * p, 2 * p + 1
        return link

    def res_shared(self, resources: int, servers: int, host) -> np.ndarray:
        shared = np.zeros(resources, np.int64)
        if host.server_s_per_byte > 0:  # the server's CPU: every worker queues for it
            shared[3::3] = 1
        return shared

    def host_ops(self, profile, host):
        return with_server_ops(profile) if host.server_s_per_byte > 0 else profile

    def charge_host(self, profile, host):
        return with_host_cpu(profile, host.tcp_s_per_byte, host.server_s_per_byte)

    def prepare(self, profile, config):
        return self.host_ops(profile, config.cluster.host)

    def transfer_durations(self, rows, ref, workers, config, link_Bps) -> None:
        return None  # every transfer is a simulated flow

    def coarse(self, classes, strategy, cluster, fractions):
        # imported here: the analytic package's compiled MVA imports the simulator's config
        from ..analytic.async_ps import async_ps
        from ..analytic.sync import sync_ps
        from ..analytic.two_way import rule_for

        B = cluster.link.bandwidth_Bps
        if strategy.mode == "sync":
            classes = slowed_classes(classes, cluster.nodes.host_cores)
            return sync_ps(classes, B, strategy.sharing or self.default_sharing("sync"),
                           fcfs_weight=cluster.contention.fcfs_weight, fractions=fractions,
                           server_queue=cluster.host.server_s_per_byte > 0)
        sharing = strategy.sharing or next(n for n, s in SHARINGS.items() if not s.simulated)
        return async_ps(classes, B, sharing, strategy.rho_threshold,
                        two_way=rule_for(cluster.contention.two_way, strategy.ps_count))
