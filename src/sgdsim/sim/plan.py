"""Turn profiles and a configuration into the simulator's read-only plan of flat arrays."""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from ..placement import layer_bytes, least_loaded
from ..profile.model import COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Profile
from ..profile.transforms import allreduce_compute_pairs, with_overhead
from ..topology import compute_slowdown, shared_cores
from ..compiled import F64, I64
from .config import SimConfig, WorkerClass
from .contract import chains, contract, contract_durations, reduce_layout
from .stats import lognormal_factors
from ..spec import ORDERS, STREAMS


class Plan(NamedTuple):
    """What the compiled core reads: the layout of engine.py's resources and the step's DAG."""

    W: int
    R: int
    n_ops: int
    sync: int
    streams: int
    window_bytes: float
    op_res: I64
    op_size: F64
    op_npred: I64
    succ_ptr: I64
    succ_idx: I64
    roots: I64
    rank: F64
    comp_key: F64
    res_link: I64
    res_shared: I64
    link_res: I64
    dur: F64
    worker_row0: I64
    worker_rows: I64
    instant: I64


@dataclass(frozen=True)
class PlanInfo:
    """What the Python side needs to interpret results."""

    ps_count: int
    resource_names: tuple[str, ...]  # by local resource index
    n_perm: int
    worker_batch: np.ndarray  # examples per step, per worker
    worker_class: tuple[str, ...]
    op_ps: np.ndarray
    op_index: np.ndarray  # profile index of each plan op (a folded chain's first op)
    shared_cores: int = 0  # K when the engine shares a host's K cores among computing workers


def resource_index(resource: str, ps: int) -> int:
    return 0 if resource == WORKER else {DOWNLINK: 1, UPLINK: 2, PS: 3}[resource] + 3 * ps


def resource_names(ps_count: int) -> tuple[str, ...]:
    names = ["worker"]
    for p in range(ps_count):
        sfx = f"[{p}]" if ps_count > 1 else ""
        names += [f"downlink{sfx}", f"uplink{sfx}", f"ps{sfx}"]
    return tuple(names)


def assign_ps(profile: Profile, ps_count: int) -> np.ndarray:
    """Whole layers to the PS holding the fewest bytes so far, in profile order (ICPE §5)."""
    owner = least_loaded(layer_bytes(profile), ps_count)
    return np.array([owner.get(op.layer, 0) if op.resource != WORKER else 0
                     for op in profile.ops], np.int64)


def _dag(profile: Profile):
    idx = profile.index()
    n = profile.n_ops
    succ: list[list[int]] = [[] for _ in range(n)]
    npred = np.zeros(n, np.int64)
    for i, op in enumerate(profile.ops):
        for d in op.deps:
            succ[idx[d]].append(i)
            npred[i] += 1
    return (npred, *_csr(succ), succ)


def _csr(succ: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(succ) + 1, np.int64)
    ptr[1:] = np.cumsum([len(s) for s in succ])
    return ptr, np.array([j for s in succ for j in sorted(s)], np.int64)


def check_same_dag(classes: list[WorkerClass]) -> None:
    if len(classes) == 1:
        return
    ref = classes[0].profile
    sig = [(o.id, o.kind, o.resource, o.ps, o.size_bytes, o.deps) for o in ref.ops]
    for c in classes[1:]:
        other = [(o.id, o.kind, o.resource, o.ps, o.size_bytes, o.deps) for o in c.profile.ops]
        if other != sig:
            raise ConfigError(f"worker class {c.name!r}: its profile's op DAG differs from "
                              f"class {classes[0].name!r} (ids, resources, sizes and deps must match)")


N_JITTER_COPIES = 32  # noisy copies of each profiled step when --jitter is set


def _jittered(durations_s: np.ndarray, config: SimConfig) -> np.ndarray:
    """Each profiled step, and with ``jitter_cv`` > 0 noisy copies of it: every compute
    duration times an independent lognormal factor of mean 1 and that coefficient of variation."""
    cv = config.control.jitter_cv
    if cv <= 0:
        return durations_s
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 11]))
    factor = lognormal_factors(rng, cv, (N_JITTER_COPIES,) + durations_s.shape)
    return (durations_s[None] * factor).reshape(-1, durations_s.shape[1])


def _durations(classes, config: SimConfig, W: int, link_Bps: float, cores: int) -> np.ndarray:
    link = config.cluster.link
    a, b = link.overhead_alpha_s_per_byte, link.overhead_beta_s
    arch, host = config.strategy.architecture, config.cluster.host
    rows = np.concatenate([_jittered(arch.charge_host(with_overhead(c.profile, a, b, arch.pulls,
                                                                    pushes=not arch.parse_in_call), host).durations_s,
                                     config) for c in classes])
    # cores shared by the engine: no static stretch
    slowdown = 1.0 if cores else compute_slowdown(W, config.cluster.nodes.host_cores, config.strategy.mode)
    if slowdown > 1.0:
        ref = classes[0].profile
        rows[:, [op.kind == COMPUTE and op.resource == WORKER for op in ref.ops]] *= slowdown
    config.strategy.architecture.transfer_durations(rows, classes[0].profile, W, config, link_Bps)
    return rows


def _comp_key(ref: Profile, keep: np.ndarray) -> np.ndarray:
    """Compute serves ready ops in profile order, except an all-reduce's share of the
    compute (``with_allreduce_compute``), which goes first: it occupies the device while the
    call runs, not when the backward pass has nothing else to do."""
    key = keep.astype(np.float64)
    virtual, _ = allreduce_compute_pairs(ref)
    key[np.isin(keep, virtual)] = -1.0
    return key


def _instant(dur: np.ndarray, op_res, res_link, npred, succ_ptr) -> np.ndarray:
    """1 for ops the engine completes as soon as they are released, without a timer: sinks
    of zero duration in every row on an exclusive resource (e.g. an unprofiled PS update).
    Nothing waits for them and they hold their resource for no time, so timing is unchanged;
    PipeDream profiles have one per layer with parameters (16 % of ResNet-50's ops). Off
    with a timeline, which shows every op."""
    sink = succ_ptr[1:] == succ_ptr[:-1]
    exclusive = res_link[op_res] < 0
    zero = (dur == 0.0).all(axis=0)
    return (sink & exclusive & zero & (npred > 0)).astype(np.int64)


Topology = namedtuple(
    "Topology", "M R op_ps op_res res_link res_shared link_res npred succ ptr flat ranks groups keep "
                "op_size comp_key reduce")
_TOPOLOGY: dict[tuple, Topology] = {}  # per DAG and strategy: every W and seed of a sweep shares one
_SIGNATURE: dict[int, tuple[Profile, int]] = {}


def _signature(profile: Profile) -> int:
    """A hash of what the topology depends on (not the durations). Memoised by identity; a
    process pool's copies of one profile hash alike."""
    hit = _SIGNATURE.get(id(profile))
    if hit is None or hit[0] is not profile:
        if len(_SIGNATURE) > 64:
            _SIGNATURE.clear()
        sig = hash(tuple((o.id, o.resource, o.ps, o.size_bytes, o.deps) for o in profile.ops))
        hit = _SIGNATURE[id(profile)] = (profile, sig)
    return hit[1]


def topology(ref: Profile, config: SimConfig) -> Topology:
    """What does not depend on W: placement, resources, the DAG, transmission orders and the
    folded chains; built once per sweep."""
    order = ORDERS[config.strategy.order]
    key = (_signature(ref), config.strategy.ps_count, ref.ps_count, config.strategy.arch, config.strategy.order,
           config.seed if order.random else 0, config.timeline, config.cluster.host.server_s_per_byte > 0)
    if key not in _TOPOLOGY:
        if len(_TOPOLOGY) > 64:
            _TOPOLOGY.clear()
        _TOPOLOGY[key] = _build_topology(ref, config)
    return _TOPOLOGY[key]


def _build_topology(ref: Profile, config: SimConfig) -> Topology:
    M = config.strategy.ps_count or ref.ps_count
    op_ps = assign_ps(ref, M) if config.strategy.ps_count else np.array([o.ps for o in ref.ops], np.int64)
    R = 1 + 3 * M
    op_res = np.array([resource_index(o.resource, int(p)) for o, p in zip(ref.ops, op_ps)], np.int64)
    npred, ptr, flat, succ = _dag(ref)
    ranks = ORDERS[config.strategy.order].ranks(ref, succ, npred, np.random.default_rng(config.seed))
    res_link = config.strategy.architecture.res_link(R, M)
    shared = config.strategy.architecture.res_shared(R, M, config.cluster.host)
    link_res = np.array([r for r in range(R) if res_link[r] >= 0], np.int64)
    groups = None
    keep = np.arange(ref.n_ops)
    if not config.timeline:  # a timeline shows every op; a shared resource's ops queue one by one
        groups = chains(npred, succ, op_res, (res_link < 0) & (shared == 0))
        keep, npred, succ, _, ranks = contract(groups, npred, succ, np.zeros((1, ref.n_ops)), ranks)
        ptr, flat = _csr(succ)
    return Topology(M, R, op_ps[keep], op_res[keep], res_link, shared, link_res, npred, succ, ptr, flat,
                    ranks, groups, keep, np.array([ref.ops[i].size_bytes for i in keep], np.float64),
                    _comp_key(ref, keep), None if groups is None else reduce_layout(groups))


def build_plan(classes: list[WorkerClass], config: SimConfig,
               workers: int | None = None) -> tuple[Plan, PlanInfo, np.ndarray, np.ndarray]:
    """Return the plan of the ranks in ``classes``, its info, and per-link bandwidth/cap in
    bytes/s. ``workers``: the job's size when fewer ranks are simulated (``sim/symmetry.py``);
    collectives and host slowdowns are timed for it."""
    check_same_dag(classes)
    ref = classes[0].profile
    W = sum(c.count for c in classes)
    t = topology(ref, config)
    link = config.cluster.link
    bw = link.bandwidth_Bps
    cap = min(bw, link.flow_cap_Bps or bw)
    cores = shared_cores(workers or W, W, config.cluster.nodes.host_cores, config.strategy.mode)
    dur = _durations(classes, config, workers or W, cap, cores)
    if t.groups is not None:
        dur = contract_durations(t.groups, dur, t.reduce)
    keep = t.keep
    copies = N_JITTER_COPIES if config.control.jitter_cv > 0 else 1
    counts = [c.profile.n_steps * copies for c in classes]
    row0 = np.cumsum([0] + counts[:-1])
    worker_cls = [k for k, c in enumerate(classes) for _ in range(c.count)]
    plan = Plan(
        W=W, R=t.R, n_ops=len(keep), sync=1 if config.strategy.mode == "sync" else 0,
        streams=STREAMS[config.strategy.streams], window_bytes=float(config.strategy.window_bytes),
        op_res=t.op_res, op_size=t.op_size,
        op_npred=t.npred, succ_ptr=t.ptr, succ_idx=t.flat,
        roots=np.flatnonzero(t.npred == 0).astype(np.int64),
        rank=t.ranks.ravel().astype(np.float64), comp_key=t.comp_key,
        res_link=t.res_link, res_shared=t.res_shared, link_res=t.link_res,
        dur=dur.ravel().copy(),
        worker_row0=np.array([row0[k] for k in worker_cls], np.int64),
        worker_rows=np.array([counts[k] for k in worker_cls], np.int64),
        instant=_instant(dur, t.op_res, t.res_link, t.npred, t.ptr) * (not config.timeline),
    )
    info = PlanInfo(
        ps_count=t.M, resource_names=resource_names(t.M),
        n_perm=t.ranks.shape[0],
        worker_batch=np.array([classes[k].profile.job.batch_size for k in worker_cls], np.float64),
        worker_class=tuple(classes[k].name for k in worker_cls), op_ps=t.op_ps,
        op_index=keep, shared_cores=cores,
    )
    return plan, info, np.full(len(t.link_res), bw), np.full(len(t.link_res), cap)
