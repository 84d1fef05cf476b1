"""Tests build simulator configurations from the flat names they state their cases in
(bits/s, as the papers give bandwidths); this maps them onto the specs, once."""
from __future__ import annotations

from sgdsim.sim import SimConfig
from sgdsim.spec import (ARCHITECTURES, Cluster, Contention, Control, LateComer, Link, Margin, Nodes, Stalls,
                         Strategy, TwoWayRule)

_STRATEGY = ("arch", "mode", "sharing", "ps_count", "streams", "window_bytes", "order", "collective",
             "bucket_size_bytes", "rho_threshold")
_CONTROL = ("seed", "warmup_steps", "steps_per_worker", "replications", "jitter_cv", "timeline")
_RUN = ("start_point", "ci_rel_target", "min_steps_per_worker", "max_ops", "auto_max_ops", "replication",
        "policy")


def specs(bandwidth_bps: float = 1e9, **flat):
    """(strategy, cluster, control) from SimConfig's former flat fields."""
    take = lambda names: {k: flat.pop(k) for k in names if k in flat}  # noqa: E731
    strategy = take(_STRATEGY)
    if "sharing" not in strategy and "sharing" in ARCHITECTURES[strategy.get("arch", "ps")].options:
        strategy["sharing"] = "ps"  # SimConfig's former default, in either mode (not hybrid for sync)
    control = take(_CONTROL)
    link = Link(bandwidth_bps / 8, _Bps(flat.pop("flow_cap_bps", None)), flat.pop("ring_latency_s", 0.0),
                flat.pop("overhead_alpha_s_per_byte", 0.0), flat.pop("overhead_beta_s", 0.0))
    late = LateComer(flat.pop("join_boost", 1.0), flat.pop("join_after_s", 0.0), flat.pop("join_delay_s", 0.0),
                     flat.pop("share_cv", 0.0))
    stalls = Stalls(flat.pop("stall_prob", 0.0), flat.pop("stall_mean_s", 0.0),
                    flat.pop("stall_incumbent_prob", 0.0), flat.pop("stall_incumbent_mean_s", 0.0))
    two_way = TwoWayRule(flat.pop("two_way_penalty", 0.0), flat.pop("two_way_table", None),
                         flat.pop("two_way_busy", (None, None)), flat.pop("two_way_joined", 1.0),
                         flat.pop("two_way_joined_after_s", 0.0), flat.pop("two_way_joined_draws", ((), ())))
    contention = Contention(flat.pop("fcfs_weight", 0.5), late, None, stalls, two_way)
    nodes = Nodes(flat.pop("gpus_per_node", 1), _Bps(flat.pop("intra_bandwidth_bps", None)),
                  flat.pop("host_cores", None), flat.pop("host_contention", 0.0),
                  flat.pop("allreduce_compute_share", 0.0))
    margin = Margin(flat.pop("model_error_rel", 0.1042), flat.pop("run_spread_rel", 0.0))
    run = take(_RUN)
    if flat:
        raise TypeError(f"unknown SimConfig fields {sorted(flat)}")
    return Strategy(**strategy), Cluster(link, contention, nodes), Control(**control, margin=margin), run


def simcfg(bandwidth_bps: float = 1e9, **flat) -> SimConfig:
    """``SimConfig`` from the former flat fields."""
    strategy, cluster, control, run = specs(bandwidth_bps, **flat)
    return SimConfig(strategy, cluster, control, **run)


def _Bps(bps):
    return None if bps is None else bps / 8
