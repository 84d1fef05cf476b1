"""Parameter servers (ICPE, TPDS §3.1): each server's downlink and uplink are shared links."""
from __future__ import annotations

import numpy as np

from ..topology import slowed_classes


class ParameterServers:
    name = "ps"
    help = "parameter servers"
    modes = ("async", "sync")
    options = ("sharing", "streams", "order", "ps_count")

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        link = np.full(resources, -1, np.int64)
        for p in range(servers):  # link 2p is server p's downlink, 2p+1 its uplink
            link[1 + 3 * p], link[2 + 3 * p] = 2 * p, 2 * p + 1
        return link

    def prepare(self, profile, config):
        return profile

    def transfer_durations(self, rows, ref, workers, config, link_Bps) -> None:
        return None  # every transfer is a simulated flow

    def coarse(self, classes, strategy, cluster, fractions):
        # imported here: the analytic package's compiled MVA imports the simulator's config
        from ..analytic.async_ps import async_ps
        from ..analytic.sync import sync_ps

        sharing = strategy.sharing
        if strategy.mode == "sync":
            classes = slowed_classes(classes, cluster.host_cores)
            return sync_ps(classes, cluster.bandwidth_bps, sharing or "hybrid",
                           fcfs_weight=cluster.fcfs_weight, fractions=fractions)
        return async_ps(classes, cluster.bandwidth_bps, sharing or "threshold", strategy.rho_threshold,
                        two_way=cluster.two_way(strategy.ps_count))
