"""Parameter servers colocated on every worker, parameters sharded (BytePS's servers on the
workers, TensorFlow's distributed_replicated): worker w also hosts 1/W of every tensor.

A worker pushes to and pulls from the W − 1 other workers' shards (its own shard is local),
so each transfer moves (W − 1)/W of its bytes through the worker's NIC, and by symmetry every
NIC is the same bottleneck as every other: a push or a pull of S bytes takes
(W − 1)/W · S / B, the bandwidth term of a ring all-reduce (TPDS Eq. 11) for a push-pull
pair. Synchronous only: the shards are updated once per step, when every push has landed.
Without overlap, one step is T_F + T_B + T_S + 2 (W − 1)/W · M / B.

The hosts' CPU per byte (``spec.Host``): every host is a worker and a server, so a push (or a
pull) of S bytes costs it (W − 1)/W · S · (tcp + server + tcp): sending as a worker, receiving
as a server (or the other way round); it is part of the transfer's time.
"""
from __future__ import annotations

import numpy as np

from ..profile.model import DOWNLINK, UPLINK
from ..topology import slowed_classes


class ColocatedShards:
    name = "colocated"
    help = "parameter servers on every worker, each holding 1/W of the parameters (sync only)"
    modes = ("sync",)
    options: tuple[str, ...] = ()
    pulls = True
    parse_in_call = False
    servers = False  # no node of their own: the planner rents none
    tcp_dynamics = False
    per_node_workers = False

    def default_sharing(self, mode: str) -> str:
        return "ps"  # no flow is simulated: every NIC carries its worker's share alone

    def label(self, mode: str, ps_count: int | None) -> str:
        return self.name

    def res_link(self, resources: int, servers: int) -> np.ndarray:
        return np.full(resources, -1, np.int64)  # each worker's NIC is its own

    def res_shared(self, resources: int, servers: int, host) -> np.ndarray:
        return np.zeros(resources, np.int64)

    def host_ops(self, profile, host):
        return profile

    def charge_host(self, profile, host):
        return profile  # charged to the transfers (transfer_durations)

    @staticmethod
    def host_s_per_byte(host) -> float:
        """A host's CPU per byte of its NIC's share of a transfer: one end as a worker, the
        other as a server."""
        return host.tcp_s_per_byte + host.server_s_per_byte

    def prepare(self, profile, config):
        return profile

    def transfer_durations(self, rows, ref, workers, config, link_Bps) -> None:
        remote = (workers - 1) / workers  # the local shard does not cross the NIC
        for side in (UPLINK, DOWNLINK):
            ops = [op.resource == side for op in ref.ops]
            sizes = remote * np.array([op.size_bytes for op in ref.ops])[ops]
            rows[:, ops] = sizes / link_Bps + sizes * self.host_s_per_byte(config.cluster.host)

    def coarse(self, classes, strategy, cluster, fractions):
        from ..analytic.sync import _overlap, _phases, _result  # see ps.py

        classes = slowed_classes(classes, cluster.nodes.host_cores)
        K, MB, TF, TB, TS = _phases(classes, cluster.link.bandwidth_Bps)
        M = max(c.model_bytes for c, _ in classes)
        TX = (K - 1) / K * (MB + M * self.host_s_per_byte(cluster.host))  # a push, or a pull, of every remote shard
        if _overlap(classes, None):  # pushes hide behind the backward pass, pulls behind the forward
            T = max(TX, TF) + max(TX, TB) + TS
        else:
            T = TF + TB + 2 * TX + TS
        return _result(classes, T, {"downlink": TX, "compute": TF + TB, "uplink": TX, "update": TS},
                       TX, self.name, "colocated shards: (W-1)/W of each tensor each way")
