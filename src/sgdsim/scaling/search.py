"""The scalability optimizer (KDD'15 §5): the configuration Φ with the least epoch time.

For each split of the machines into N_mr model replicas of N_wr workers (C1), dynamic
programming over the layers chooses every layer's partitions P(l) and threads H(l):

    T([1, l], p, h) = own(l, p, h) + min over (p', h') of
                      T([1, l−1], p', h') + M_f(l | p', p, h) + M_b(l−1 | p', h', p)

where own(l, p, h) is layer l's compute over Q(l) plus its weight reads, M_f the activations
layer l receives from l−1 and M_b the error terms l−1 receives from l (both set by the pair
of partition counts, through the greedy mapping). The state carries H because a layer's
error-term traffic, paid with its own threads, depends on the next layer's partitions. The
rest is decided in closed form, and the brute force (``brute_force``) confirms it:

- R(l) = ⌊N_wr / P(l)⌋ (or ``max_replicas``): replicas only multiply Q(l) (C3 caps them). The
  model charges nothing for keeping a layer's replicas in step, so without a cap the optimum
  replicates every layer across its replica;
- N_ps: reads in the worst case (Eq. 10) do not depend on it, so 1; in the best case (Eq. 11)
  they fall with min(N_ps, N_wr), so min(N − N_mr·N_wr, N_wr).

Cost: O(L·K·N_wr²) per split, O(L·K·N³) in all (N machines, K cores, L layers); the paper's
O(L·K·N⁷) bound allows arbitrary mappings, this one the greedy mapping of stripes.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .layers import Layer
from .model import C_BITS, Config, Constants, Network, compute_s, read_times_s


# The DP costs ~4x per doubling of N (N = 64: ~4 s); beyond these it would run for hours
# (docs/optimize.md, "Limits").
MAX_MACHINES = 256
MAX_CORES = 256


@dataclass(frozen=True)
class Problem:
    layers: tuple[Layer, ...]
    machines: int  # N
    cores: int  # K
    constants: Constants
    network: Network
    n_sample: int  # samples per epoch
    n_read: int  # a replica reads the weights every n_read samples
    worst: bool = True  # Eq. 10 (every replica reads from one server) or Eq. 11
    max_replicas: int | None = None  # cap on R(l); None: C3's n_wr / P(l)

    def __post_init__(self):
        if not 2 <= self.machines <= MAX_MACHINES:
            raise ConfigError(f"--machines must be from 2 (a PS and a worker) to {MAX_MACHINES}, "
                              f"got {self.machines}")
        if not 1 <= self.cores <= MAX_CORES:
            raise ConfigError(f"--cores must be from 1 to {MAX_CORES}, got {self.cores}")
        if self.n_sample < 1 or self.n_read < 1:
            raise ConfigError("the dataset size and the read interval must be at least 1 sample")
        if not self.layers:
            raise ConfigError("the model has no layers")
        if self.max_replicas is not None and self.max_replicas < 1:
            raise ConfigError(f"--max-layer-replicas must be at least 1, got {self.max_replicas}")

    def replicas(self, n_wr: int, p: int) -> int:
        """R(l): as many as C3 (and the cap) allow."""
        return min(n_wr // p, self.max_replicas or n_wr)


@dataclass(frozen=True)
class Solution:
    config: Config
    epoch_time_s: float
    read_min_s: float  # Eq. 11 for this configuration
    read_max_s: float  # Eq. 10


def n_ps_for(prob: Problem, n_mr: int, n_wr: int) -> int:
    return 1 if prob.worst else min(prob.machines - n_mr * n_wr, n_wr)


def optimize(prob: Problem, progress: Callable[[int, int], None] | None = None) -> Solution:
    splits = [(m, w) for m in range(1, prob.machines) for w in range(1, (prob.machines - 1) // m + 1)]
    for local in (False, True):  # the largest tables once (the splits grow N_wr one by one)
        fractions(prob.machines - 1, local)
    best: tuple[float, Config] | None = None
    for k, (n_mr, n_wr) in enumerate(splits):
        T, cfg = _dp(prob, n_mr, n_wr, n_ps_for(prob, n_mr, n_wr))
        if best is None or T < best[0] * (1 - 1e-12):
            best = (T, cfg)
        if progress:
            progress(k + 1, len(splits))
    assert best is not None
    T, cfg = best
    lo, hi = read_times_s(list(prob.layers), cfg, prob.network)
    return Solution(cfg, T, lo, hi)


def _dp(prob: Problem, n_mr: int, n_wr: int, n_ps: int) -> tuple[float, Config]:
    layers, c, net = prob.layers, prob.constants, prob.network
    P = np.arange(1, n_wr + 1)
    H = np.arange(1, min(prob.cores, 64) + 1)
    R = np.array([prob.replicas(n_wr, int(p)) for p in P])
    Q = H[None, :] * R[:, None] * n_mr  # (p, h)
    interf = np.array([c.interf(int(h)) for h in H])
    cost = None
    choices = []
    for l, layer in enumerate(layers):
        own = _own(layer, layers[l + 1].connections if l + 1 < len(layers) else 0.0, P, H, Q,
                   interf, prob, n_mr, n_wr, n_ps)
        if cost is None:
            cost = own
            continue
        FA, FE = fractions(n_wr, layer.local)  # [p', p]
        A = layers[l - 1].neurons * FA
        E = layer.neurons * FE
        tE = _transfer(E[:, None, :], H[None, :, None], net) / Q[:, :, None]  # (p', h', p)
        G = cost[:, :, None] + tE
        g_arg = G.argmin(axis=1)  # best h' per (p', p)
        G = G.min(axis=1)  # (p', p)
        tA = _transfer(A[:, :, None], H[None, None, :], net) / Q[None, :, :]  # (p', p, h)
        total = G[:, :, None] + tA
        p_arg = total.argmin(axis=0)  # (p, h)
        cost = own + total.min(axis=0)
        choices.append((p_arg, g_arg))
    assert cost is not None
    p, h = np.unravel_index(int(cost.argmin()), cost.shape)
    Ps, Hs = [int(p)], [int(h)]
    for p_arg, g_arg in reversed(choices):
        pp = int(p_arg[Ps[-1], Hs[-1]])
        Hs.append(int(g_arg[pp, Ps[-1]]))
        Ps.append(pp)
    Ps, Hs = Ps[::-1], Hs[::-1]
    cfg = Config(n_ps, n_mr, n_wr, tuple(x + 1 for x in Ps), tuple(x + 1 for x in Hs),
                 tuple(prob.replicas(n_wr, x + 1) for x in Ps))
    return float(cost.min()) * prob.n_sample, cfg


def _own(layer: Layer, next_connections: float, P, H, Q, interf, prob: Problem, n_mr, n_wr, n_ps):
    """Compute over Q(l), plus the weight reads over N_read: (p, h)."""
    U = np.array([compute_s(layer, next_connections, int(p), prob.constants) for p in P])
    reads = np.zeros(len(H))
    if layer.weight_bytes > 0:
        bits = layer.weight_bytes * 8.0 * H / prob.network.bandwidth_bps
        reads = prob.network.latency_s + (n_mr * bits if prob.worst else bits / min(n_ps, n_wr))
    return U[:, None] * interf[None, :] / Q + reads[None, :] / prob.n_read


def _transfer(values, h, net: Network):
    t = net.latency_s + values * C_BITS * h / net.bandwidth_bps
    return np.where(values > 0, t, 0.0)


_TABLES: dict[bool, tuple[np.ndarray, np.ndarray]] = {}


def fractions(n: int, local: bool) -> tuple[np.ndarray, np.ndarray]:
    """[p', p] for p', p = 1..n: the worst stripe's remote share of the previous layer's
    activations (A / N_neuron(l−1)) and of this layer's error terms (E / N_neuron(l)). A pair's
    value does not depend on n: the largest table is kept and sliced."""
    have = _TABLES.get(local)
    if have is None or len(have[0]) < n:
        FA, FE = np.zeros((n, n)), np.zeros((n, n))
        for pp in range(1, n + 1):
            for p in range(1, n + 1):
                FA[pp - 1, p - 1], FE[pp - 1, p - 1] = stripe_fractions(pp, p, local)
        _TABLES[local] = have = (FA, FE)
    return have[0][:n, :n], have[1][:n, :n]


def stripe_fractions(pp: int, p: int, local: bool) -> tuple[float, float]:
    """``model.remote`` for unit layers, in O(p + p') instead of O(p·p')."""
    if not local:  # all of the other layer is needed; one stripe of it is at hand, if any
        a = 1.0 if p > pp else 1.0 - 1.0 / pp
        e = 1.0 if pp > p else 1.0 - 1.0 / p
        return a, e
    partner = _local_mapping(pp, p)
    a = max(1.0 / p - _ov(s / p, (s + 1) / p, i, pp) for s, i in enumerate(partner))
    of = {i: s for s, i in enumerate(partner) if i >= 0}
    e = max(1.0 / pp - (_ov(i / pp, (i + 1) / pp, of[i], p) if i in of else 0.0) for i in range(pp))
    return max(0.0, a), max(0.0, e)


def _ov(lo: float, hi: float, i: int, n: int) -> float:
    if i < 0:
        return 0.0
    return max(0.0, min(hi, (i + 1) / n) - max(lo, i / n))


def _local_mapping(pp: int, p: int) -> list[int]:
    """``model.greedy_mapping`` looking only at the stripes that overlap (-1: none free)."""
    taken = [False] * pp
    free = 0  # the lowest index that may be free
    out = []
    for s in range(p):
        lo, hi = s / p, (s + 1) / p
        best, best_ov = -1, 0.0
        for i in range(max(0, int(lo * pp) - 1), min(pp, int(math.ceil(hi * pp)) + 1)):
            ov = _ov(lo, hi, i, pp)
            if not taken[i] and ov > best_ov:
                best, best_ov = i, ov
        if best < 0:
            while free < pp and taken[free]:
                free += 1
            best = free if free < pp else -1
        if best >= 0:
            taken[best] = True
        out.append(best)
    return out


def brute_force(prob: Problem) -> Solution:
    """Every configuration allowed by C1-C3, through the model's own per-layer function
    (memoised: a layer's term depends on its neighbours' partitions only). Small N and L."""
    from .model import layer_term

    layers, L = list(prob.layers), len(prob.layers)
    memo: dict[tuple, float] = {}

    def term(l, pp, p, pn, h, r, n_mr, n_wr, n_ps):
        key = (l, pp, p, pn, h, r, n_mr, n_wr, n_ps)
        if key not in memo:
            memo[key] = layer_term(layers, l, pp, p, pn, h, r, n_mr, n_wr, n_ps, prob.constants,
                                   prob.network, prob.n_read, prob.worst)
        return memo[key]

    best: tuple[float, Config] | None = None
    for n_ps in range(1, prob.machines):
        for n_mr in range(1, prob.machines - n_ps + 1):
            for n_wr in range(1, (prob.machines - n_ps) // n_mr + 1):
                per_layer = [(p, h, r) for p in range(1, n_wr + 1) for h in range(1, prob.cores + 1)
                             for r in range(1, prob.replicas(n_wr, p) + 1)]
                for combo in itertools.product(per_layer, repeat=L):
                    P = (0, *(x[0] for x in combo), 0)
                    T = sum(term(l, P[l], P[l + 1], P[l + 2], combo[l][1], combo[l][2], n_mr, n_wr, n_ps)
                            for l in range(L)) * prob.n_sample
                    if best is None or T < best[0]:
                        best = (T, Config(n_ps, n_mr, n_wr, *(tuple(x[i] for x in combo) for i in range(3))))
    assert best is not None
    lo, hi = read_times_s(layers, best[1], prob.network)
    return Solution(best[1], best[0], lo, hi)
