"""The KDD'15 performance model (§4), in the paper's notation, per training sample.

A configuration: N_ps parameter servers, N_mr model replicas of N_wr workers each, and per
layer l: P(l) partitions (stripes of its neurons), H(l) threads per worker, R(l) replicas of
the layer inside a model replica. Times in seconds, sizes in bytes, bandwidth in bits/s.

- Eq. 5  U_f(l,p) = C_muladd·W(l,p) + C_act·N_neuron(l,p)
- Eq. 6  M_f(l,p) = C_ncost + A(l,p)·C_bits / C_nbw   (only when A > 0: nothing to wait for
  otherwise)
- Eq. 7  U_b(l,p) = C_muladd·W'(l,p) + C_err·N_neuron(l,p)   (W': connections from layer l+1)
- Eq. 8  U_w(l,p) = C_muladd·W(l,p)
- Eq. 9  U(l,p,h) = C_interf(H(l))·U(l,p); a thread gets C_nbw/H(l) of the NIC
- Q(l) = H(l)·R(l)·N_mr samples in parallel at layer l (§4.2.1-4.2.3)
- Eq. 10 Mw_max = Σ_l C_ncost + N_mr·W(l)/C_nbw(H(l))   (every replica reads from one server)
- Eq. 11 Mw_min = Σ_l C_ncost + W(l)/(C_nbw(H(l))·min(N_ps, N_wr))
- T_epoch = Mw·N_sample/N_read + Σ_l (U_f + M_f + U_b + M_b + U_w)(l)·N_sample/Q(l)

A(l,p), E(l,p) (remote activations and error terms) come from the segment-to-worker mapping
(``remote``): layer l's segments go greedily to the workers holding most of their inputs.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from ..errors import ConfigError
from ..tagged_json import read_tagged
from ..units import parse_number
from .layers import Layer

FORMAT = "sgdsim-kdd-constants"
C_BITS = 32  # bits per activation or error term (fp32)


MAX_COST_S = 1.0  # seconds per multiply-add, activation or error term: far above any machine
MAX_INTERFERENCE = 1e6  # H threads' time over one thread's


def _positive(value, what: str, hi: float) -> None:
    """A finite number in (0, hi]: no text, no bool, no 400-digit integer (math.isfinite
    would raise OverflowError on that)."""
    if isinstance(value, str) or parse_number(value, what, lo=0, hi=hi) <= 0:
        raise ConfigError(f"{what} must be a positive number, got {str(value)[:40]!r}")


@dataclass(frozen=True)
class Constants:
    """The machine's costs (seconds per operation), from the canonical micro-benchmark."""

    muladd_s: float  # C_muladd
    act_s: float  # C_act
    err_s: float  # C_err
    interference: tuple[float, ...] = (1.0,)  # C_interf(H) for H = 1, 2, ...: time ratio vs one thread
    measured: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        for name in ("muladd_s", "act_s", "err_s"):
            _positive(getattr(self, name), f"constants: {name}", MAX_COST_S)
        if not self.interference or not isinstance(self.interference, tuple):
            raise ConfigError(f"constants: interference factors must be positive numbers, "
                              f"got {self.interference!r}")
        for x in self.interference:
            _positive(x, "constants: interference factors", MAX_INTERFERENCE)

    def interf(self, h: int) -> float:
        """C_interf(h); beyond the measured thread counts, the last one measured."""
        return self.interference[min(h, len(self.interference)) - 1]


@dataclass(frozen=True)
class Network:
    bandwidth_bps: float  # C_nbw
    latency_s: float = 0.0  # C_ncost

    def __post_init__(self):
        if not (math.isfinite(self.bandwidth_bps) and self.bandwidth_bps > 0):
            raise ConfigError(f"bandwidth must be positive, got {self.bandwidth_bps}")
        if not (math.isfinite(self.latency_s) and self.latency_s >= 0):
            raise ConfigError(f"latency must be a non-negative duration, got {self.latency_s}")


def save_constants(c: Constants, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": FORMAT, **asdict(c), "interference": list(c.interference)}, f, indent=2)


def load_constants(path) -> Constants:
    data = read_tagged(path, FORMAT, "constants file", ConfigError)
    missing = [k for k in ("muladd_s", "act_s", "err_s", "interference") if k not in data]
    if missing:
        raise ConfigError(f"constants file {path}: missing {missing[0]!r}")
    if not isinstance(data["interference"], list):
        raise ConfigError(f"constants file {path}: interference must be a list of numbers")
    try:
        return Constants(data["muladd_s"], data["act_s"], data["err_s"],
                         tuple(data["interference"]), data.get("measured", {}))
    except ConfigError as e:
        raise ConfigError(f"constants file {path}: {str(e).removeprefix('constants: ')}") \
            from None


# --- remote activations under the greedy segment-to-worker mapping (§5.3) -----------------

def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def greedy_mapping(p_prev: int, p: int) -> list[int | None]:
    """For each of layer l's ``p`` stripes, the stripe of layer l−1 whose worker it joins: the
    free one it overlaps most (ties: the lowest), or None when every one is taken (a worker
    of its own). Stripe i of a layer with n stripes covers [i/n, (i+1)/n). Two stripes of one
    layer never share a worker (C3)."""
    taken: set[int] = set()
    out: list[int | None] = []
    for s in range(p):
        lo, hi = s / p, (s + 1) / p
        best = max((i for i in range(p_prev) if i not in taken),
                   key=lambda i: (_overlap(lo, hi, i / p_prev, (i + 1) / p_prev), -i), default=None)
        if best is not None:
            taken.add(best)
        out.append(best)
    return out


def remote(n_prev: float, n: float, p_prev: int, p: int, local: bool) -> tuple[float, float]:
    """(A, E): the most remote activations a stripe of layer l receives from layer l−1, and
    the most remote error terms a stripe of layer l−1 receives from layer l, per sample.

    Fully connected: a stripe needs all of the other layer; local receptive fields
    (convolution): the same stripe of it. What its worker holds of the other layer is local."""
    mapping = greedy_mapping(p_prev, p)
    A = 0.0
    for s, i in enumerate(mapping):
        need = (0.0, 1.0) if not local else (s / p, (s + 1) / p)
        have = _overlap(*need, i / p_prev, (i + 1) / p_prev) if i is not None else 0.0
        A = max(A, n_prev * (need[1] - need[0] - have))
    partner = {i: s for s, i in enumerate(mapping) if i is not None}
    E = 0.0
    for i in range(p_prev):
        need = (0.0, 1.0) if not local else (i / p_prev, (i + 1) / p_prev)
        s = partner.get(i)
        have = _overlap(*need, s / p, (s + 1) / p) if s is not None else 0.0
        E = max(E, n * (need[1] - need[0] - have))
    return A, E


# --- the per-sample terms -----------------------------------------------------------------

def compute_s(layer: Layer, next_connections: float, p: int, c: Constants) -> float:
    """U_f + U_b + U_w of one stripe (Eqs. 5, 7, 8), one thread."""
    n = (layer.neurons + layer.extra_activations) / p
    W = layer.connections / p
    U_f = c.muladd_s * W + c.act_s * n
    U_b = c.muladd_s * next_connections / p + c.err_s * n
    U_w = c.muladd_s * W
    return U_f + U_b + U_w


def transfer_s(values: float, h: int, net: Network) -> float:
    """Eq. 6 (and its back-propagation twin) with H threads sharing the NIC (§4.2.1)."""
    if values <= 0:
        return 0.0
    return net.latency_s + values * C_BITS * h / net.bandwidth_bps


def read_s(weight_bytes: float, h: int, n_mr: int, n_ps: int, n_wr: int, net: Network,
           worst: bool) -> float:
    """One layer's term of Eq. 10 (``worst``) or Eq. 11."""
    if weight_bytes <= 0:
        return 0.0
    bits = weight_bytes * 8.0 * h / net.bandwidth_bps
    return net.latency_s + (n_mr * bits if worst else bits / min(n_ps, n_wr))


@dataclass(frozen=True)
class Config:
    """Φ of Figure 7."""

    n_ps: int
    n_mr: int
    n_wr: int
    P: tuple[int, ...]
    H: tuple[int, ...]
    R: tuple[int, ...]

    def check(self, machines: int, cores: int) -> None:
        """C1-C3 (C4, threads of one segment on one worker, holds by construction)."""
        if self.n_ps < 1 or self.n_mr < 1 or self.n_wr < 1:
            raise ConfigError("a configuration needs at least one PS, replica and worker")
        if self.n_ps + self.n_mr * self.n_wr > machines:
            raise ConfigError("C1: N_ps + N_mr × N_wr exceeds the machines")
        if any(h > cores for h in self.H):
            raise ConfigError("C2: more threads than cores")
        if any(p * r > self.n_wr for p, r in zip(self.P, self.R)):
            raise ConfigError("C3: a layer's partitions × replicas exceed the replica's workers")


def epoch_time_s(layers: list[Layer], cfg: Config, c: Constants, net: Network,
                 n_sample: int, n_read: int, worst: bool = True) -> float:
    """T_epoch of §4.2.3 for configuration ``cfg``."""
    return sum(layer_terms(layers, cfg, c, net, n_read, worst)) * n_sample


def layer_terms(layers: list[Layer], cfg: Config, c: Constants, net: Network, n_read: int,
                worst: bool) -> list[float]:
    """Per layer, its share of the epoch time per sample."""
    P = (0, *cfg.P, 0)  # 0: no layer there
    return [layer_term(layers, l, P[l], P[l + 1], P[l + 2], cfg.H[l], cfg.R[l], cfg.n_mr,
                       cfg.n_wr, cfg.n_ps, c, net, n_read, worst) for l in range(len(layers))]


def layer_term(layers: list[Layer], l: int, p_prev: int, p: int, p_next: int, h: int, r: int,
               n_mr: int, n_wr: int, n_ps: int, c: Constants, net: Network, n_read: int,
               worst: bool) -> float:
    """Layer l's compute and activation/error traffic over Q(l), plus its weight reads over
    N_read; ``p_prev``/``p_next`` 0 at the ends of the chain."""
    layer = layers[l]
    nxt = layers[l + 1] if p_next else None
    U = c.interf(h) * compute_s(layer, nxt.connections if nxt else 0.0, p, c)
    A = remote(layers[l - 1].neurons, layer.neurons, p_prev, p, layer.local)[0] if p_prev else 0.0
    E = remote(layer.neurons, nxt.neurons, p, p_next, nxt.local)[1] if nxt else 0.0
    M = transfer_s(A, h, net) + transfer_s(E, h, net)
    Mw = read_s(layer.weight_bytes, h, n_mr, n_ps, n_wr, net, worst)
    return (U + M) / (h * r * n_mr) + Mw / n_read


def read_times_s(layers: list[Layer], cfg: Config, net: Network) -> tuple[float, float]:
    """(Mw_min, Mw_max) of Eqs. 11 and 10 for ``cfg``."""
    def total(worst: bool) -> float:
        return sum(read_s(layer.weight_bytes, h, cfg.n_mr, cfg.n_ps, cfg.n_wr, net, worst)
                   for layer, h in zip(layers, cfg.H))
    return total(False), total(True)
