"""The keyword form of a prediction (``sgdsim.predict(profile, bandwidth="10Gbps", ...)``)
into the four specs. Human units are accepted (``"10Gbps"``, ``"28MB"``, ``"2ms"``); each
keyword is parsed once, here, and every spec checks its own fields when it is built.

The keywords (``KEYWORDS`` lists them with their defaults). They mirror ``sgdsim predict``: human units are accepted (``bandwidth="10Gbps"``,
``window="28MB"``), ``workers`` takes ``"1-16"``, ``"1,2,4"``, an int or a list.
``model``: "fine" (simulator), "coarse" (TPDS analytical models), "lin", "cynthia"
(baselines) or "all" (every model that can honour the options; ``on_skip(reason)`` is
told about the others). ``sharing`` defaults to the papers' choices: hybrid (the mean of
PS and FCFS, TPDS §3.1.1/§3.2.1) for sync PS; for async, ps in the simulator and Eq. 5
("threshold") in the coarse model. ``fcfs_weight`` w turns hybrid into (1 − w)·PS + w·FCFS
(0.5: the papers' mean). ``share_cv`` > 0: under PS sharing, flows draw unequal shares
(lognormal weights of that CV, as measured by ``netbench --lab --fanout``).
``two_way_penalty`` k > 0: a NIC direction with m more flows the other way loses k·m of its
capacity; ``two_way_table[d][n][m]`` gives the measured shares instead (``netbench --lab
--two-way`` measures both; ``analytic/two_way.py``). ``two_way_busy`` (pull, push): the
shares training traffic gets while the NIC carries 3 or more transfers both ways
(``sgdsim.lab.busy``), each one share or a list by flow count from 3 on (the last holds
from there on); they replace those entries of the table, with one PS. ``two_way_busy_shaped``
(pull, push) with ``two_way_busy_shape`` s in (0, 1]: the same fitted as c times the measured
entry to the power s, which the simulator uses instead (the coarse model keeps the flat ones).
``two_way_joined`` (pull, push) and ``two_way_joined_after``: the share a lone transfer keeps
once a transfer the other way joined it, from that long after the join (``sim/sharing/fair.py``;
``examples/lab/incumbent.py record-joined`` measures them); with the table, one PS.
``two_way_joined_draws`` (pulls, pushes), each a list of (after_s, share): the measured
joined transfers one by one; a direction that has them draws one per join instead of its
fixed step (the lab's do not all slow alike). ``ring_latency``
(all-reduce): the fixed cost of every ring step of every call, e.g. ``"2ms"`` (``netbench
--lab --gloo`` measures it); a call of M bytes on N ranks takes 2(N−1)·(M/(N·B) + latency).
``allreduce_compute_share`` (all-reduce, Tianshu §3.3): the fraction of a worker's compute
an all-reduce call occupies while it runs (NCCL: 16 of a V100's 80 SMs, 0.2), so that
compute overlapping it slows down; ``sgdsim netbench --interference`` measures it.
``collective`` (all-reduce): "ring" (flat) or "hierarchical" (``topology/collectives/``);
``gpus_per_node`` devices per node share the node's NIC (``bandwidth``) and each has an
``intra_bandwidth`` link inside it (e.g. ``"150GB/s"``); ``workers`` counts devices.
``bucket_size`` (e.g. ``"25MB"``): PyTorch DDP's gradient buckets, one call each, the
first of 1 MiB; None: one call per layer. ``overlap`` False (``--no-overlap``): every transfer
waits for the step's compute on its side, pushes for the whole backward pass and the forward
for every pull, whatever the profile's DAG allows (TensorFlow 1.x's transfers wait on the
device's stream; ``profile/transforms.without_overlap``).
``transport`` ("tcp" or "rdma") and ``tcp_cpu``: the kernel's CPU per byte a host sends or
receives over TCP; ``reduce_on`` ("device" or "host") and ``reduce_cpu``: the host's CPU per
byte a collective reduces; ``server_cpu``: a parameter server's CPU per byte it receives or
sends (seconds per byte, e.g. 2e-9; ``spec/host.py``, docs/hosts.md).
``host_cores``: every worker runs on one host of that many cores (the lab); synchronous
workers, computing at once, each get K/W of a core (``topology/hosts.py``).
``host_contention`` (pulls, pushes), PS: a worker's compute is that much slower per other
worker on its host pulling, pushing (the lab's shared cores; ``topology/hosts.py``).
``run_spread``: the relative run-to-run noise of the real job (``sgdsim calibrate`` with
several runs); every fine interval is at least mean·(1 ± run_spread). ``model_error``: the
fine model's relative error for one run, added to each side of the interval in quadrature
(``evaluate/margin.py``; None: ``MODEL_ERROR_REL``, as the lab's validation measured it;
0: the simulator's spread alone); given, it is the coarse model's interval too.
``interval_level``: 0.8, 0.85, 0.9 or 0.95 (default) of real runs inside the intervals, each
level with its measured margins (``spec.control.MODEL_ERROR_BY_LEVEL``). ``fit_uncertainty``:
a pilot calibration's 95 % relative uncertainty on the goodput (a hardware file's), added to
both models' error in quadrature. ``coarse`` gives a coarse
profile (``"size=102MB,fwd=182ms,bwd=261ms,batch=128"`` or an object) instead of a file.
``worker_profiles`` (heterogeneous workers) replaces ``profile``/``workers``: one point.
``replications``: "auto" (default) runs rounds of independent simulations until the mean
is known to ±2 % (``replicate.py``); the interval then covers the spread between runs and
``regimes`` reports two clusters of runs. 1: a single run with a batch-means interval.
``executor``: where the simulated points run (``evaluate.executors``; default: in this
process, each point's replications on every core).
This is the parsing front of ``evaluate.evaluate(job, strategy, cluster, workers)``.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..spec import (DEFAULT_RHO_THRESHOLD, Cluster, Contention, Control, Host, LateComer,
                    Link, Margin, Nodes, Stalls, Strategy, TwoWayRule)
from ..spec.control import LEVELS
from ..spec.registries import DEFAULT_ARCH, DEFAULT_COLLECTIVE, DEFAULT_ORDER, DEFAULT_STREAMS, MODES
from ..spec.two_way import check_busy
from ..units import (parse_bandwidth_Bps, parse_duration_s, parse_number, parse_size_bytes,
                     parse_size_with_unit_bytes)

# Every keyword and its default: the one list (``predict``'s docstring explains them).
STRATEGY_KEYWORDS = dict(arch=DEFAULT_ARCH, mode=MODES[0], sharing=None, ps_count=None,
                         streams=DEFAULT_STREAMS, window="28MB", order=DEFAULT_ORDER,
                         collective=DEFAULT_COLLECTIVE, bucket_size=None,
                         rho_threshold=DEFAULT_RHO_THRESHOLD, overlap=True)
CLUSTER_KEYWORDS = dict(
    bandwidth="10Gbps", flow_cap=None, ring_latency=0.0, overhead_alpha=0.0, overhead_beta=0.0,
    fcfs_weight=0.5, share_cv=0.0, join_boost=1.0, join_after=0.0, join_delay=0.0,
    measured_late_comer=None, stall_prob=0.0, stall_mean=0.0, stall_incumbent=0.0,
    stall_incumbent_mean=0.0, two_way_penalty=0.0, two_way_table=None, two_way_busy=None,
    two_way_busy_shape=0.0, two_way_busy_shaped=None, two_way_joined=1.0, two_way_joined_after=0.0,
    two_way_joined_draws=((), ()),
    gpus_per_node=1, intra_bandwidth=None, host_cores=None, host_contention=0.0,
    allreduce_compute_share=0.0, transport="tcp", tcp_cpu=0.0, reduce_on="device", reduce_cpu=0.0,
    server_cpu=0.0)
CONTROL_KEYWORDS = dict(seed=0, warmup=None, steps="auto", replications="auto", jitter=0.0,
                        timeline=False, run_spread=0.0, model_error=None, interval_level=0.95,
                        fit_uncertainty=0.0)
KEYWORDS = {**STRATEGY_KEYWORDS, **CLUSTER_KEYWORDS, **CONTROL_KEYWORDS}


def specs(**keywords) -> tuple[Strategy, Cluster, Control]:
    """The strategy, cluster and control of ``keywords``; an unknown keyword is refused."""
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise ConfigError(f"unknown keyword {unknown[0]!r} (known: {', '.join(sorted(KEYWORDS))})")
    kw = {**KEYWORDS, **keywords}
    return strategy(kw), cluster(kw), control(kw)


def strategy(kw: dict) -> Strategy:
    return Strategy(arch=kw["arch"], mode=kw["mode"], sharing=kw["sharing"], ps_count=_int(kw["ps_count"], "--ps-count"),
                    streams=kw["streams"], window_bytes=parse_size_bytes(kw["window"]), order=kw["order"],
                    collective=kw["collective"], bucket_size_bytes=_optional(_bucket_bytes, kw["bucket_size"]),
                    rho_threshold=_float(kw["rho_threshold"], "--rho-threshold"), overlap=kw["overlap"])


def cluster(kw: dict) -> Cluster:
    link = Link(bandwidth_Bps=parse_bandwidth_Bps(kw["bandwidth"]),
                flow_cap_Bps=_optional(parse_bandwidth_Bps, kw["flow_cap"]),
                step_latency_s=parse_duration_s(kw["ring_latency"]),
                overhead_alpha_s_per_byte=_non_negative(kw["overhead_alpha"], "--overhead-alpha"),
                overhead_beta_s=parse_duration_s(kw["overhead_beta"]))
    late = LateComer(boost=pair(kw["join_boost"], "--join-boost"),
                     after_s=pair(kw["join_after"], "--join-after", duration=True),
                     delay_s=pair(kw["join_delay"], "--join-delay", duration=True),
                     share_cv=_float(kw["share_cv"], "--share-cv"))
    stalls = Stalls(prob=pair(kw["stall_prob"], "--stall-prob"),
                    mean_s=pair(kw["stall_mean"], "--stall-mean", duration=True),
                    incumbent_prob=pair(kw["stall_incumbent"], "--stall-incumbent"),
                    incumbent_mean_s=pair(kw["stall_incumbent_mean"], "--stall-incumbent-mean", duration=True))
    two_way = TwoWayRule(penalty=_float(kw["two_way_penalty"], "--two-way-penalty"), table=kw["two_way_table"],
                         busy=busy(kw["two_way_busy"]), joined=pair(kw["two_way_joined"], "two_way_joined"),
                         joined_after_s=pair(kw["two_way_joined_after"], "two_way_joined_after", duration=True),
                         joined_draws=kw["two_way_joined_draws"], busy_shape=kw["two_way_busy_shape"],
                         busy_shaped=busy(kw["two_way_busy_shaped"], "two_way_busy_shaped"))
    contention = Contention(fcfs_weight=_float(kw["fcfs_weight"], "--fcfs-weight"), late_comer=late,
                            measured_late_comer=kw["measured_late_comer"], stalls=stalls, two_way=two_way)
    nodes = Nodes(gpus_per_node=_int(kw["gpus_per_node"], "--gpus-per-node"),
                  intra_bandwidth_Bps=_optional(parse_bandwidth_Bps, kw["intra_bandwidth"]),
                  host_cores=_int(kw["host_cores"], "--host-cores"),
                  host_contention=pair(kw["host_contention"], "host_contention"),
                  allreduce_compute_share=_non_negative(kw["allreduce_compute_share"], "allreduce compute share"))
    return Cluster(link, contention, nodes, host(kw))


def host(kw: dict) -> Host:
    """``transport``/``tcp_cpu``, ``reduce_on``/``reduce_cpu``, ``server_cpu``: seconds of CPU
    per byte (``spec/host.py``)."""
    return Host(transport=kw["transport"], tcp_cpu_s_per_byte=_float(kw["tcp_cpu"], "--tcp-cpu"),
                reduce_on=kw["reduce_on"], reduce_cpu_s_per_byte=_float(kw["reduce_cpu"], "--reduce-cpu"),
                server_cpu_s_per_byte=_float(kw["server_cpu"], "--server-cpu"))


def control(kw: dict) -> Control:
    given = kw["model_error"] is not None
    margin = Margin.at_level(interval_level(kw["interval_level"]), _float(kw["run_spread"], "run spread"),
                             margin_rel(kw["model_error"]) if given else None,
                             _float(kw["fit_uncertainty"], "calibration fit uncertainty"))
    return Control(seed=_int(kw["seed"], "--seed"), warmup_steps=5 if kw["warmup"] is None else _int(kw["warmup"], "--warmup"),
                   steps_per_worker=_count_or_auto(kw["steps"], "--steps"),
                   replications=_count_or_auto(kw["replications"], "--replications"),
                   jitter_cv=_float(kw["jitter"], "--jitter"), timeline=bool(kw["timeline"]), margin=margin)


def interval_level(value) -> float:
    """0.8, 0.85, 0.9 or 0.95, also written as a percentage ("90%", "90")."""
    text = str(value).strip().rstrip("%")
    try:
        x = float(text)
    except (ValueError, OverflowError):
        x = -1.0
    x = x / 100 if x > 1 else x
    level = next((lv for lv in LEVELS if abs(lv - x) < 1e-9), None)
    if level is None:
        raise ConfigError(f"--interval-level must be one of {', '.join(f'{lv:.0%}' for lv in LEVELS)}, "
                          f"got {value!r}")
    return level


def margin_rel(value, what: str = "model error (--model-error)") -> float:
    """A relative margin: a fraction in [0, 1), or a percentage such as "12%"."""
    text = str(value).strip()
    try:
        m = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except (ValueError, OverflowError):
        raise ConfigError(f"{what} must be a fraction such as 0.12 or a percentage such as 12%, "
                          f"got {value!r}") from None
    if not 0 <= m < 1:
        raise ConfigError(f"{what} must be in [0, 1) (0 to 100 %), got {value!r}")
    return m


def pair(value, what: str, duration: bool = False) -> tuple:
    """One value for pulls and pushes, or two: "1.4,1.2", (1.4, 1.2), durations with units."""
    if isinstance(value, str):
        parts = tuple(value.split(","))
    else:
        parts = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if duration:
        return tuple(parse_duration_s(p) for p in parts)
    return tuple(_float(p, what) for p in parts)


def busy(value, name: str = "two_way_busy") -> tuple:
    """Busy shares (pulls, pushes): None, one share for both, or two, each a share, a list of
    shares by flow count from 3 on, or None (as the table)."""
    if value is None:
        return (None, None)
    parts = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(parts) != 2:
        raise ConfigError(f"{name} expects a share or two (pulls, pushes), got {value!r}")
    return tuple(None if v is None else check_busy(v, f"{name} share") for v in parts)


_FINITE = 1.7976931348623157e308
_INT64 = 2**63


def _float(value, what: str) -> float:
    return parse_number(value, what, lo=-_FINITE, hi=_FINITE)  # the spec checks the range


def _non_negative(value, what: str) -> float:
    try:
        return parse_number(value, what, lo=0.0, hi=_FINITE)
    except ConfigError:
        raise ConfigError(f"{what} must be non-negative, got {value!r}") from None


def _int(value, what: str) -> int | None:
    return None if value is None else parse_number(value, what, lo=-_INT64, hi=_INT64, integer=True)


def _bucket_bytes(value) -> float:
    return parse_size_with_unit_bytes(value, "--bucket-size")


def _optional(parse, value):
    return None if value is None else parse(value)


def _count_or_auto(value, option: str) -> int | None:
    if value in ("auto", None):
        return None
    try:
        return _int(value, option)
    except ConfigError:
        raise ConfigError(f"{option} takes a number or 'auto', got {value!r}") from None
