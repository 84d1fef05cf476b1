"""Coarse-grained models of synchronous SGD (TPDS §3.1): closed forms, Eqs. 7–11.

K workers, model size M, bandwidth B (bytes/s), forward T_F, backward T_B, update T_S. Workers come as
classes ``[(profile, count), ...]``; with heterogeneous workers the step waits for the slowest
compute (the straggler).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..spec import SHARINGS, Host, Link
from .coarse_profile import CoarseProfile
from .results import CoarseResult
from ..topology import Topology, allreduce_s, even_buckets
from ..topology.collectives.ring import ring_call_s


Classes = list[tuple[CoarseProfile, int]]


def _phases(classes: Classes, bandwidth_Bps: float):
    K = sum(n for _, n in classes)
    slow = max((c for c, _ in classes), key=lambda c: c.compute_s)
    M_over_B = max(c.model_bytes for c, _ in classes) / bandwidth_Bps
    update = max(c.update_s for c, _ in classes)
    return K, M_over_B, slow.forward_s, slow.backward_s, update


def _overlap(classes: Classes, overlap: bool | None) -> bool:
    return all(c.overlap for c, _ in classes) if overlap is None else overlap


def sync_ps(classes: Classes, bandwidth_Bps: float, sharing: str | None = None,
            overlap: bool | None = None, fcfs_weight: float = 0.5,
            fractions: tuple[float, ...] = (1.0,), server_queue: bool = False) -> CoarseResult:
    """Sync PS step time: Eq. 7 (PS sharing), Eq. 8 (FCFS), Eq. 9 (hybrid = their mean;
    generalised to the uplink term (1 − w)·K·M/B + w·M/B, Eq. 9 being w = 0.5);
    with overlap, Eq. 10: max(T_D, T_F) + max(T_U, T_B) + T_S (the same max form is used for
    the PS and FCFS uplink terms). ``sharing`` is a ``SHARINGS`` name (None: the mix of runs,
    hybrid): its ``fcfs_weight`` (None: ``fcfs_weight``) is w, its ``sync_eq`` the equation; a
    mix (``runs``) with overlap is Eq. 10.

    Several parameter servers, PS j holding the share ``fractions[j]`` of the bytes: the
    busiest server's NIC moves K·max_j f_j·M per direction and step, but no less than one
    worker's own NIC moves (M), so K·M/B becomes max(1, K·max_j f_j)·M/B; the servers update
    their shares at once, in max_j f_j·T_S. ``server_queue``: a server's CPU that charges per
    byte (``spec.Host``) is one resource every worker queues for, as in the simulator, so
    the busiest server's CPU works K·max_j f_j·T_S a step (T_S with the charges)."""
    if sharing is None:
        sharing = next(n for n, s in SHARINGS.items() if s.runs)
    d = SHARINGS[sharing]
    if not d.sync_eq:
        known = ", ".join(n for n, s in SHARINGS.items() if s.sync_eq)
        raise ConfigError(f"--sharing {sharing} has no coarse sync PS model (choose from {known})")
    w = fcfs_weight if d.fcfs_weight is None else d.fcfs_weight
    K, MB, TF, TB, TS = _phases(classes, bandwidth_Bps)
    overlap = _overlap(classes, overlap)
    load = max(1.0, K * max(fractions))
    TS = TS * max(fractions) * (K if server_queue else 1)  # the servers update their shares at once
    TD = load * MB
    TU = (1 - w) * load * MB + w * MB
    if overlap:
        T = max(TD, TF) + max(TU, TB) + TS
    else:
        T = TD + TF + TB + TU + TS
    eq = "10" if overlap and d.runs else d.sync_eq
    return _result(classes, T, {"downlink": TD, "compute": TF + TB, "uplink": TU, "update": TS},
                   load * MB, sharing, f"TPDS Eq. {eq}" + (" with overlap" if overlap else ""))


def ring_allreduce_s(size_bytes, ranks: int, link_Bps: float, step_latency_s: float = 0.0):
    """``ring_call_s`` of every layer in ``size_bytes``; a layer of 0 bytes makes no call."""
    size = np.asarray(size_bytes, np.float64)
    return np.where(size > 0, ring_call_s(size, ranks, link_Bps, step_latency_s), 0.0)


def ring_allreduce(classes: Classes, bandwidth_Bps: float, overlap: bool | None = None,
                   step_latency_s: float = 0.0, compute_share: float = 0.0, collective: str = "ring",
                   gpus_per_node: int = 1, intra_bandwidth_Bps: float | None = None,
                   bucket_size_bytes: float | None = None, host: Host = Host(),
                   link: Link | None = None) -> CoarseResult:
    """All-reduce step time, Eq. 11: T_F + T_B + 2(K−1)M/(KB), plus the update T_S when
    the profile has one; with overlap the all-reduce hides behind the backward pass:
    T_F + max(T_B, 2(K−1)M/(KB)) + T_S. With a ring-step latency α the profile's ``messages``
    calls (one per layer) add messages·2(K−1)·α. With overlap, a call that occupies
    ``compute_share`` s of the device while it runs (Tianshu §3.3) stretches the backward it
    overlaps by s·T_A: T_F + max(T_B + s·T_A, T_A) + T_S.

    Multi-device nodes (issue 12): T_A is the ``collective``'s time on nodes of
    ``gpus_per_node`` devices (``topology/collectives/``; the flat ring with one device per
    node is Eq. 11), and with ``bucket_size_bytes`` the calls are DDP's buckets of a model known
    only by its size (``even_buckets``) instead of ``messages`` equal calls. ``host``: each
    call also waits for its ranks' CPU (``Host.allreduce_s``), which the compute share leaves out,
    and for the receiver's parsing of what it receives (``Link.ring_parse_s``)."""
    K, _, TF, TB, TS = _phases(classes, bandwidth_Bps)
    overlap = _overlap(classes, overlap)
    M = max(c.model_bytes for c, _ in classes)
    if bucket_size_bytes is None:
        calls = max(c.messages for c, _ in classes)
        sizes, counts = np.array([M / calls]), np.array([float(calls)])
    else:
        sizes, counts = even_buckets(M, bucket_size_bytes)
    topo = Topology(bandwidth_Bps, gpus_per_node, intra_bandwidth_Bps, step_latency_s)
    TA = float(np.dot(counts, allreduce_s(collective, sizes, K, topo)))
    TH = float(np.dot(counts, np.where(sizes > 0, host.allreduce_s(sizes, K), 0.0)))
    if link is not None:
        TH += float(np.dot(counts, link.ring_parse_s(sizes, K)))
    T = TF + (max(TB + compute_share * TA, TA + TH) if overlap else TB + TA + TH) + TS
    label = "TPDS Eq. 11" if (collective, gpus_per_node) == ("ring", 1) else f"{collective} all-reduce"
    return _result(classes, T, {"compute": TF + TB, "allreduce": TA + TH, "update": TS},
                   TA, collective, label + (" with overlap" if overlap else ""))


def _result(classes: Classes, step_s: float, phases: dict, nic_busy_s: float, regime: str,
            eq: str) -> CoarseResult:
    """``phases``: compute, update and the NIC phases (the PS's downlink and uplink, or the
    workers' all-reduce), in this order in the utilizations; ``nic_busy_s``: per step, the PS
    NIC's busy time in each direction (K·M/B), or each worker's NIC's for all-reduce."""
    if not step_s > 0:  # no compute, and nothing to send (one all-reduce rank)
        raise ConfigError("a step takes no time in this configuration (no compute, nothing sent)")
    util = {"worker": phases["compute"] / step_s}
    util |= {k: min(1.0, nic_busy_s / step_s) for k in phases if k not in ("compute", "update")}
    batch = sum(c.batch_size * n for c, n in classes)
    return CoarseResult(model="coarse", workers=sum(n for _, n in classes), throughput=batch / step_s,
                        step_time_s=step_s, response_time_s=dict(phases), utilization=util,
                        regime=regime, equations=eq)
