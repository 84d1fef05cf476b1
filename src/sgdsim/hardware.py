"""The measured hardware file and the α·size + β overhead fit (ICPE §3.2.1).

A message of ``size`` bytes takes ``α·size + β`` seconds end to end: ``α`` is the per-byte
cost (so the bandwidth is ``8/α`` bits/s) and ``β`` the per-message cost (round trip,
system calls, framing). Internal units: bytes, seconds, bits per second.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from .tagged_json import read_json
from .errors import ConfigError, ProfileError
from .spec import ARCHITECTURES, LateComer
from .spec.host import REDUCE_ON, TRANSPORTS
from .spec.strategy import measured_dynamics_apply as dynamics_apply
from .spec.two_way import check_busy, check_table
from .parse.relevance import ignored

FORMAT = "sgdsim-hardware"
VERSION = 1


@dataclass(frozen=True)
class Fit:
    """Weighted least-squares fit of ``time = alpha·size + beta``.

    ``max_rel_residual``: the worst ``|fit − t| / t``; ``r_squared``: the share of the
    variance of the times that the line explains.
    """

    alpha_s_per_byte: float
    beta_s: float
    max_rel_residual: float
    r_squared: float

    @property
    def bandwidth_bps(self) -> float:
        return 8.0 / self.alpha_s_per_byte

    def time_s(self, size_bytes: float) -> float:
        return self.alpha_s_per_byte * size_bytes + self.beta_s


@dataclass(frozen=True)
class Hardware:
    """One point-to-point link as measured by ``sgdsim netbench``."""

    bandwidth_bps: float
    latency_s: float
    overhead_alpha_s_per_byte: float
    overhead_beta_s: float
    measured: dict = field(default_factory=dict, compare=False)
    fcfs_weight: float | None = None  # hybrid sharing's FCFS share (lab.fairness); None: not measured
    allreduce_bandwidth_bps: float | None = None  # Eq. 11's B fitted to gloo (lab.gloo_bench)
    share_cv: float | None = None  # spread of TCP shares among concurrent flows (lab.fairness)
    parse_alpha_s_per_byte: float | None = None  # receiver CPU per byte (sgdsim calibrate)
    two_way_penalty: float | None = None  # capacity lost per surplus reverse flow (lab.twoway)
    run_spread_rel: float | None = None  # run-to-run noise of the real job (sgdsim calibrate)
    model_error_rel: float | None = None  # the fine model's error on this cluster (sgdsim validate)
    ring_latency_s: float | None = None  # fixed cost per all-reduce ring step (lab.gloo_bench)
    two_way_table: tuple | None = None  # measured shares [direction][n][m] (lab.twoway)
    two_way_busy: float | tuple | None = None  # downlink share in training traffic, both ways
    # busy (lab.busy): one share, or one per flow count from 3 on (analytic/two_way.busy_share)
    two_way_busy_push: float | tuple | None = None  # the same for the uplink
    two_way_busy_shape: float | None = None  # s: the simulator's busy shares keep the table^s,
    two_way_busy_shaped: float | tuple | None = None  # fitted so (lab.busy), pulls and pushes
    two_way_busy_shaped_push: float | tuple | None = None
    two_way_joined: float | None = None  # a lone pull's share once a push joined it (incumbent.py)
    two_way_joined_after_s: float | None = None  # ... from this long after the push started
    two_way_joined_push: float | None = None  # the same for a push that a pull joined
    two_way_joined_after_push_s: float | None = None
    two_way_joined_draws: tuple | None = None  # the joined pulls one by one: ((after_s, share), ...)
    two_way_joined_draws_push: tuple | None = None  # the same for pushes
    allreduce_compute_share: float | None = None  # compute a call occupies (lab.interference)
    host_cores: int | None = None  # every worker on one host of this many cores (netbench --lab)
    host_contention: float | None = None  # compute slower per other worker pulling (findings 12-13)
    host_contention_push: float | None = None  # ... and per other worker pushing
    join_boost: float | None = None  # weight of a pull joining a busy link (lab.joiner)
    join_after_s: float | None = None  # ... once the youngest pull there has run this long
    join_boost_push: float | None = None  # the same for pushes; None: they share equally
    join_after_push_s: float | None = None
    join_delay_s: float | None = None  # ... after the joiner has run this long (incumbent.py ramp)
    join_delay_push_s: float | None = None
    stall_prob: float | None = None  # of a pull that starts against traffic the other way (lab.stalls)
    stall_mean_s: float | None = None  # ... its exponential wait's mean
    stall_prob_push: float | None = None  # the same for pushes
    stall_mean_push_s: float | None = None
    stall_incumbent_prob: float | None = None  # of a pull under way when a push starts (lab.stalls)
    stall_incumbent_mean_s: float | None = None
    stall_incumbent_prob_push: float | None = None  # of a push under way when a pull starts
    stall_incumbent_mean_push_s: float | None = None
    tcp_cpu_s_per_byte: float | None = None  # CPU per byte sent or received over TCP (netbench --host-cpu)
    reduce_cpu_s_per_byte: float | None = None  # host CPU per byte reduced (netbench --host-cpu)
    server_cpu_s_per_byte: float | None = None  # a PS's framework CPU per byte in or out
    transport: str | None = None  # one of spec.host.TRANSPORTS (None: tcp)
    reduce_on: str | None = None  # one of spec.host.REDUCE_ON (None: device)

    @classmethod
    def nominal(cls, bandwidth_bps: float) -> "Hardware":
        """A link known only by its rate: no overheads, no measurements (the papers' defaults)."""
        return cls(bandwidth_bps=bandwidth_bps, latency_s=0.0,
                   overhead_alpha_s_per_byte=8.0 / bandwidth_bps, overhead_beta_s=0.0)

    def predict_kwargs(self, arch: str, mode: str | None = None, ps_count: int | None = None,
                       sharing: str | None = None, tcp_dynamics: bool | None = None,
                       flow_capped: bool = False) -> dict:
        """The keywords this file gives ``sgdsim.predict`` for one strategy (mode None: the
        architecture's first), none it would ignore. TCP dynamics (``_tcp_dynamics``): async PS
        of one server without a flow cap; ``tcp_dynamics`` None takes the late-comer's boost
        where the file has its onset delay, True also the stalls, False none."""
        mode = mode or ARCHITECTURES[arch].modes[0]
        dynamics = tcp_dynamics is not False and dynamics_apply(arch, mode, ps_count, sharing, flow_capped)
        kw = {"bandwidth": self.bandwidth_for(arch), "overhead_beta": self.overhead_beta_s,
              "overhead_alpha": self.parse_alpha_s_per_byte or 0.0,
              "fcfs_weight": 0.5 if self.fcfs_weight is None else self.fcfs_weight,
              **self._two_way(), "run_spread": self.run_spread_rel or 0.0,
              **({"fit_uncertainty": self.fit_uncertainty_rel} if self.fit_uncertainty_rel else {}),
              **({"model_error": self.model_error_rel} if self.model_error_rel is not None else {}),
              **({"host_cores": self.host_cores} if self.host_cores is not None else {}),
              **({"host_contention": self._directions("host_contention")}
                 if self._directions("host_contention", None) != (None, None) else {}),
              **(self._tcp_dynamics(bool(tcp_dynamics)) if dynamics else {}),
              **{kw: getattr(self, key) for kw, key in _HOST_KEYWORDS if getattr(self, key) is not None},
              "ring_latency": self.ring_latency_s or 0.0,
              "allreduce_compute_share": self.allreduce_compute_share or 0.0}
        drop = ignored({**kw, "arch": arch, "mode": mode, "sharing": sharing}, "all")
        return {k: v for k, v in kw.items() if k not in drop}

    @property
    def fit_uncertainty_rel(self) -> float:
        """A pilot calibration's 95 % relative uncertainty on the goodput (0 without one)."""
        sd = self.measured.get("calibration", {}).get("sd_log_bandwidth")
        return min(0.99, 1.96 * sd) if isinstance(sd, (int, float)) and sd == sd and sd > 0 else 0.0

    def late_comer(self) -> LateComer | None:
        """The default's late-comer dynamics, where the file has them (see ``_tcp_dynamics``);
        a prediction applies them where they were measured (``sim.config.late_comer``)."""
        kw = self._tcp_dynamics(stalls=False)
        return LateComer(kw["join_boost"], kw["join_after"], kw["join_delay"], kw["share_cv"]) if kw else None

    def _two_way(self) -> dict:
        """The measured table, and the busy shares of training traffic where measured (the
        models apply them with one PS: ``Cluster.two_way``)."""
        if self.two_way_table is None:
            return {"two_way_penalty": self.two_way_penalty or 0.0}
        busy, extra = self._directions("two_way_busy", None), {}
        if self.two_way_busy_shape:  # the simulator's shares (busy.py --shape); the coarse model's stay flat
            extra = {"two_way_busy_shape": self.two_way_busy_shape,
                     "two_way_busy_shaped": self._directions("two_way_busy_shaped", None)}
        draws = self._directions("two_way_joined_draws", ())
        if self._directions("two_way_joined", None) != (None, None) or any(draws):
            extra |= {"two_way_joined": self._directions("two_way_joined", 1.0),
                      "two_way_joined_after": self._directions("two_way_joined_after_s"),
                      **({"two_way_joined_draws": draws} if any(draws) else {})}
        return {"two_way_table": self.two_way_table,
                **({"two_way_busy": busy} if busy != (None, None) else {}), **extra}

    def _tcp_dynamics(self, stalls: bool) -> dict:
        """Async PS flows of one server: the late-comer's boost pulls workers into lock-step and
        the unequal shares push them out; both or neither (docs/validation/regimes/, findings 3
        and 5; alone, either one biases the regime). The boost only with its onset delay
        (finding 8: without it, a transfer joining one about to end locks workers the lab does
        not), unless ``stalls``: then also a boost without a delay, and the stalls against
        traffic the other way (finding 6), which lock the lab's two workers in the model. Sync
        PS already has its unequal shares as the hybrid FCFS weight, and several PS water-fill
        worker NICs, which weights do not compose with yet."""
        out = {}
        if self.join_boost is not None and (stalls or self.join_delay_s is not None):
            out = {"join_boost": self._directions("join_boost", 1.0),
                   "join_after": self._directions("join_after_s"),
                   "join_delay": self._directions("join_delay_s"), "share_cv": self.share_cv or 0.0}
        if not stalls:
            return out
        for prob, mean, prob_kw, mean_kw in (
                ("stall_prob", "stall_mean_s", "stall_prob", "stall_mean"),
                ("stall_incumbent_prob", "stall_incumbent_mean_s", "stall_incumbent", "stall_incumbent_mean")):
            if self._directions(prob, None) != (None, None):
                out |= {prob_kw: self._directions(prob), mean_kw: self._directions(mean)}
        return out

    def _directions(self, field_name: str, default: Any = 0.0) -> tuple:
        """(pulls, pushes) of a field and its ``_push`` twin, ``default`` where not measured."""
        values = (getattr(self, field_name), getattr(self, push_twin(field_name)))
        return tuple(default if v is None else v for v in values)

    def bandwidth_for(self, arch: str) -> float:
        """The B a prediction for ``arch`` should use."""
        if "collective" in ARCHITECTURES[arch].options and self.allreduce_bandwidth_bps:
            return self.allreduce_bandwidth_bps
        return self.bandwidth_bps

    def to_dict(self) -> dict:
        optional = {key: getattr(self, key) for key, required, _ in _FIELDS if not required}
        for key in ("two_way_table", "transport", "reduce_on") + _BUSY + _DRAWS:  # tuples, names
            optional[key] = getattr(self, key)
        return {"format": FORMAT, "version": VERSION, "bandwidth_bps": self.bandwidth_bps,
                "latency_s": self.latency_s,
                "overhead_alpha_s_per_byte": self.overhead_alpha_s_per_byte,
                "overhead_beta_s": self.overhead_beta_s,
                **{k: v for k, v in optional.items() if v is not None},
                "measured": dict(self.measured)}


def fit_overhead(sizes_bytes, times_s) -> Fit:
    """Fit ``t = α·s + β`` to (size, median time) points, weights ``1/t``.

    That is least squares with a noise variance proportional to the time, the noise of a
    transfer made of many independently jittered packets. Plain least squares lets the
    millisecond jitter of the largest messages decide β (it came out at −1.6 ms on loopback);
    least squares on relative errors lets the smallest messages, which a token bucket or the
    CPU caches take off the line, decide α (1.9× the asymptotic loopback rate). Exact data is
    recovered exactly by any weighting.
    """
    pts = [(float(s), float(t)) for s, t in zip(sizes_bytes, times_s)]
    if len(pts) < 2 or len({s for s, _ in pts}) < 2:
        raise ConfigError("overhead fit needs at least two different message sizes")
    if any(not (t > 0 and math.isfinite(t)) or not (0 <= s < math.inf) for s, t in pts):
        raise ConfigError("overhead fit needs positive finite times and non-negative sizes")
    scale = max(s for s, _ in pts)  # sizes in units of the largest keep the 2x2 system tame
    a11 = sum((s / scale) ** 2 / t for s, t in pts)
    a12 = sum(s / scale / t for s, t in pts)
    a22 = sum(1 / t for s, t in pts)
    b1 = sum(s / scale for s, t in pts)
    b2 = float(len(pts))
    det = a11 * a22 - a12 * a12
    alpha = (b1 * a22 - b2 * a12) / det / scale
    beta = (a11 * b2 - a12 * b1) / det
    if not alpha > 0:
        raise ConfigError("cannot fit the overhead model: message times do not grow with size "
                          "(measure larger messages, e.g. --sizes 1KiB-64MiB)")
    resid = [alpha * s + beta - t for s, t in pts]
    mean_t = sum(t for _, t in pts) / len(pts)
    ss_tot = sum((t - mean_t) ** 2 for _, t in pts)
    r2 = 1.0 - sum(r * r for r in resid) / ss_tot if ss_tot > 0 else 1.0
    return Fit(alpha, beta, max(abs(r) / t for r, (_, t) in zip(resid, pts)), r2)


def hardware_from(fit: Fit, rtt_s: float, measured: dict | None = None) -> Hardware:
    """Latency is half the median small-message round trip (one way, like a link delay).

    A noisy fit can put β slightly below zero; the file stores 0 then (a negative per-message
    cost means nothing) and keeps the raw value under ``measured.fit_beta_s``.
    """
    measured = dict(measured or {}, fit_beta_s=fit.beta_s, fit_max_rel_residual=fit.max_rel_residual,
                    fit_r_squared=fit.r_squared)
    return Hardware(bandwidth_bps=fit.bandwidth_bps, latency_s=rtt_s / 2.0,
                    overhead_alpha_s_per_byte=fit.alpha_s_per_byte,
                    overhead_beta_s=max(fit.beta_s, 0.0), measured=measured)


def save_hardware(hw: Hardware, path: str | os.PathLike, *, force: bool = False) -> None:
    name = os.fspath(path)
    if os.path.exists(name) and not force:
        raise ConfigError(f"{name} exists; refusing to overwrite (use --force)")
    try:
        with open(name, "w", encoding="utf-8") as f:
            json.dump(hw.to_dict(), f, indent=1)
            f.write("\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {name}: {exc.strerror or exc}") from None


def push_twin(field_name: str) -> str:
    """The name of a pull field's twin for pushes: ``join_boost_push``, ``join_delay_push_s``."""
    return field_name[:-2] + "_push_s" if field_name.endswith("_s") else field_name + "_push"


def load_hardware(path: str | os.PathLike) -> Hardware:
    name = os.fspath(path)
    return hardware_from_dict(read_json(name, "hardware file", ProfileError), name)


_WHOLE = "a whole number >= 1"  # the one rule whose values are ints
_RULES = {"positive": lambda v: v > 0, "non-negative": lambda v: v >= 0, "in (0, 1]": lambda v: 0 < v <= 1,
          "in [0, 1]": lambda v: 0 <= v <= 1, "in [0, 1)": lambda v: 0 <= v < 1,
          _WHOLE: lambda v: v >= 1 and float(v).is_integer()}
_FIELDS = (  # key, required, rule
    ("bandwidth_bps", True, "positive"), ("latency_s", True, "non-negative"),
    ("overhead_alpha_s_per_byte", True, "positive"), ("overhead_beta_s", True, "non-negative"),
    ("fcfs_weight", False, "in [0, 1]"), ("allreduce_bandwidth_bps", False, "positive"),
    ("share_cv", False, "non-negative"), ("parse_alpha_s_per_byte", False, "non-negative"),
    ("two_way_penalty", False, "in [0, 1)"), ("run_spread_rel", False, "in [0, 1)"),
    ("model_error_rel", False, "in [0, 1)"), ("two_way_busy_shape", False, "in [0, 1]"),
    ("two_way_joined", False, "in (0, 1]"), ("two_way_joined_push", False, "in (0, 1]"),
    ("two_way_joined_after_s", False, "non-negative"),
    ("two_way_joined_after_push_s", False, "non-negative"),
    ("ring_latency_s", False, "non-negative"), ("allreduce_compute_share", False, "in [0, 1)"),
    ("host_cores", False, _WHOLE), ("host_contention", False, "non-negative"),
    ("host_contention_push", False, "non-negative"), ("join_boost", False, "positive"),
    ("join_after_s", False, "non-negative"), ("join_boost_push", False, "positive"),
    ("join_after_push_s", False, "non-negative"), ("join_delay_s", False, "non-negative"),
    ("join_delay_push_s", False, "non-negative"), ("stall_prob", False, "in [0, 1]"),
    ("stall_mean_s", False, "non-negative"), ("stall_prob_push", False, "in [0, 1]"),
    ("stall_mean_push_s", False, "non-negative"), ("stall_incumbent_prob", False, "in [0, 1]"),
    ("stall_incumbent_mean_s", False, "non-negative"),
    ("stall_incumbent_prob_push", False, "in [0, 1]"),
    ("stall_incumbent_mean_push_s", False, "non-negative"), ("tcp_cpu_s_per_byte", False, "non-negative"),
    ("reduce_cpu_s_per_byte", False, "non-negative"), ("server_cpu_s_per_byte", False, "non-negative"))
_HOST_KEYWORDS = (("tcp_cpu", "tcp_cpu_s_per_byte"), ("reduce_cpu", "reduce_cpu_s_per_byte"),
                  ("server_cpu", "server_cpu_s_per_byte"), ("transport", "transport"), ("reduce_on", "reduce_on"))


def hardware_from_dict(data, name: str = "<dict>") -> Hardware:
    def bad(msg: str):
        raise ProfileError(f"hardware file {name}: {msg}")

    if not isinstance(data, dict):
        bad("expected a JSON object")
    if data.get("format") != FORMAT:
        bad(f"format is {data.get('format')!r}, expected {FORMAT!r}")
    if data.get("version") != VERSION:
        bad(f"unsupported version {data.get('version')!r} (this sgdsim reads version {VERSION})")
    values: dict[str, Any] = {}
    for key, required, rule in _FIELDS:
        v = data.get(key)
        if v is None and not required:
            continue
        if not _finite(v):
            bad(f"field {key!r} must be a finite number, got {v!r}")
        if not _RULES[rule](v):
            bad(f"field {key!r} must be {rule}, got {v!r}")
        values[key] = int(v) if rule == _WHOLE else float(v)
    if data.get("two_way_table") is not None:
        try:
            values["two_way_table"] = check_table(data["two_way_table"], "field 'two_way_table'")
        except ConfigError as exc:
            bad(str(exc))
    for key in _BUSY:
        if data.get(key) is not None:
            try:
                values[key] = check_busy(data[key], f"field {key!r}")
            except ConfigError as exc:
                bad(str(exc))
    for key in _DRAWS:
        if data.get(key) is not None:
            values[key] = _draws(data[key], key, bad)
    corrections = [k for base in ("two_way_busy", "two_way_busy_shaped", "two_way_joined", "two_way_joined_draws")
                   for k in (base, push_twin(base)) if k in values]
    if corrections and "two_way_table" not in values:
        bad(f"field {corrections[0]!r} corrects a measured two_way_table, and the file has none "
            "(netbench --lab --two-way)")
    if bool(values.get("two_way_busy_shape")) != any(k in values for k in _SHAPED):
        bad("fields 'two_way_busy_shape' and 'two_way_busy_shaped' go together (examples/lab/busy.py --shape)")
    values |= _names(data, bad)
    if not isinstance(measured := data.get("measured", {}), dict):
        bad("field 'measured' must be an object")
    return Hardware(measured=measured, **values)


_DRAWS = ("two_way_joined_draws", "two_way_joined_draws_push")


def _names(data: dict, bad) -> dict:
    """The file's transport and where it reduces, each one of its known names."""
    out = {}
    for key, known in (("transport", TRANSPORTS), ("reduce_on", REDUCE_ON)):
        if data.get(key) is not None:
            if data[key] not in known:
                bad(f"field {key!r} must be one of {', '.join(known)}, got {data[key]!r}")
            out[key] = data[key]
    return out
_SHAPED = ("two_way_busy_shaped", "two_way_busy_shaped_push")  # the simulator's, with two_way_busy_shape
_BUSY = ("two_way_busy", "two_way_busy_push") + _SHAPED


def _finite(v) -> bool:
    """A JSON number a float holds: not a bool, nan, inf or 400-digit integer (isfinite raises)."""
    from .units import parse_number

    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        parse_number(v, "value", lo=-1.7976931348623157e308, hi=1.7976931348623157e308)
    except ConfigError:
        return False
    return True


def _draws(value, key: str, bad) -> tuple:
    """A list of measured (after_s, share) pairs, at least one, each within the simulator's
    bounds of a joined share (``spec.cluster.check_joined``)."""
    from .spec.cluster import check_joined

    def pair(p) -> bool:
        if not (isinstance(p, (list, tuple)) and len(p) == 2 and all(map(_finite, p))):
            return False
        try:
            check_joined([p[1]], [p[0]])
        except ConfigError:
            return False
        return True

    if not isinstance(value, (list, tuple)) or not value or not all(map(pair, value)):
        bad(f"field {key!r} must be a non-empty list of [after_s, share] pairs, after_s from 0 "
            "to 1h and share in (0, 1]")
    return tuple((float(a), float(s)) for a, s in value)
