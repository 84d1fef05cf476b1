"""What a plan optimises: the cheapest configuration within a target epoch time, the fastest
within a budget per epoch, or (neither) the Pareto frontier of epoch time and cost.

A ``PlanPoint`` is one configuration's prediction with its epoch time and cost per epoch,
both with the interval that the throughput's interval implies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from ..spec import Cluster, Strategy
from ..point import PredictionPoint

KINDS = ("target", "budget", "frontier")
RESOLUTION = 0.02  # relative: below this, two predictions are not told apart (replicate.REL_TARGET)


@dataclass(frozen=True)
class Prices:
    """Per node-hour; ``ps`` None: a server node costs what a worker node costs."""

    worker: float = 1.0
    ps: float | None = None

    def __post_init__(self):
        for what, price in (("--price-per-node-hour", self.worker), ("--ps-price-per-node-hour", self.ps)):
            if price is not None and not 0 <= price <= MAX_PRICE:
                raise ConfigError(f"{what} must be a number from 0 to {MAX_PRICE:g}, got {price}")


MAX_PRICE = 1e9  # per node-hour: beyond, costs per epoch overflow


@dataclass(frozen=True)
class PlanPoint:
    strategy: Strategy
    cluster: Cluster
    workers: int
    throughput: float
    ci_low: float
    ci_high: float
    bottleneck: str
    model: str
    dataset_size: int
    prices: Prices = Prices()

    @classmethod
    def of(cls, p: PredictionPoint, strategy: Strategy, cluster: Cluster, dataset_size: int,
           prices: Prices = Prices()) -> PlanPoint:
        return cls(strategy, cluster, p.workers, p.throughput, p.ci_low, p.ci_high, p.bottleneck,
                   p.model, dataset_size, prices)

    @property
    def ps_nodes(self) -> int:
        return (self.strategy.ps_count or 1) if self.strategy.architecture.servers else 0

    @property
    def worker_nodes(self) -> int:
        """Nodes rented for the workers: devices in nodes of ``gpus_per_node`` (a part-used node
        costs a whole one)."""
        return math.ceil(self.workers / self.cluster.nodes.gpus_per_node)

    @property
    def price_per_hour(self) -> float:
        ps = self.prices.worker if self.prices.ps is None else self.prices.ps
        return self.worker_nodes * self.prices.worker + self.ps_nodes * ps

    def epoch_time_s(self, throughput: float | None = None) -> float:
        x = self.throughput if throughput is None else throughput
        return self.dataset_size / x if x > 0 else math.inf

    def cost_per_epoch(self, throughput: float | None = None) -> float:
        return self.epoch_time_s(throughput) / 3600.0 * self.price_per_hour

    @property
    def epoch_interval_s(self) -> tuple[float, float]:
        return self.epoch_time_s(self.ci_high), self.epoch_time_s(self.ci_low)

    @property
    def cost_interval(self) -> tuple[float, float]:
        return self.cost_per_epoch(self.ci_high), self.cost_per_epoch(self.ci_low)

    def to_dict(self) -> dict:
        s = self.strategy
        return {"strategy": s.label, "arch": s.arch, "mode": s.mode, "workers": self.workers,
                "worker_nodes": self.worker_nodes, "ps_count": self.ps_nodes,
                "bandwidth_bps": 8 * self.cluster.link.bandwidth_Bps,  # users' unit, as --bandwidth
                "throughput": self.throughput, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "epoch_time_s": self.epoch_time_s(), "cost_per_epoch": self.cost_per_epoch(),
                "bottleneck": self.bottleneck, "model": self.model}


@dataclass(frozen=True)
class Objective:
    kind: str = "frontier"
    target_epoch_time_s: float | None = None
    budget_per_epoch: float | None = None

    def __post_init__(self):
        limit = {"target": self.target_epoch_time_s, "budget": self.budget_per_epoch}.get(self.kind, 0.0)
        if self.kind not in KINDS:
            raise ConfigError(f"unknown objective {self.kind!r} (choose from {', '.join(KINDS)})")
        if limit is None or not (math.isfinite(limit) and limit >= 0):
            raise ConfigError(f"the {self.kind} objective needs a positive limit, got {limit}")

    def feasible(self, p: PlanPoint) -> bool:
        if self.kind == "target" and self.target_epoch_time_s is not None:
            return p.epoch_time_s() <= self.target_epoch_time_s
        if self.kind == "budget" and self.budget_per_epoch is not None:
            return p.cost_per_epoch() <= self.budget_per_epoch
        return True

    def key(self, p: PlanPoint) -> tuple:
        """Smaller is better; ties on the first criterion go to the other one, then to fewer nodes."""
        nodes = p.worker_nodes + p.ps_nodes
        if self.kind == "budget":
            return (p.epoch_time_s(), p.cost_per_epoch(), nodes)
        return (p.cost_per_epoch(), p.epoch_time_s(), nodes)

    def finalists(self, points: list[PlanPoint], n: int) -> list[PlanPoint]:
        """``n`` points for the simulator: the best point of each strategy and bandwidth first
        (so that close rivals get checked), then the next best; points that miss the objective
        come last, closest first (the fine pass may disagree with the coarse one)."""
        if self.kind == "frontier":
            front = self.frontier(points)
            if len(front) <= n:
                return front
            step = (len(front) - 1) / (n - 1) if n > 1 else 0
            return [front[round(i * step)] for i in range(n)]
        ok = sorted((p for p in points if self.feasible(p)), key=self.key)
        missed = sorted((p for p in points if not self.feasible(p)), key=self._closeness)
        groups: dict[tuple, list[PlanPoint]] = {}
        for p in ok or missed:
            groups.setdefault((p.strategy, p.cluster.link.bandwidth_Bps), []).append(p)
        leaders = sorted((self._leader(g) if ok else g[0] for g in groups.values()),
                         key=self.key if ok else self._closeness)
        rest = [p for p in ok + missed if all(p is not q for q in leaders)]
        return (leaders + rest)[:n]

    def _leader(self, group: list[PlanPoint]) -> PlanPoint:
        """Of one strategy's points that are as good as its best within ``RESOLUTION`` (a
        linearly scaling strategy costs the same per epoch at every W), the best on the other
        measure: the fastest of the equally cheap."""
        best = self.key(group[0])[0]
        close = [p for p in group if self.key(p)[0] <= best * (1 + RESOLUTION)]
        return min(close, key=lambda p: self.key(p)[1:])

    def _closeness(self, p: PlanPoint) -> tuple:
        if self.kind == "target":
            return (p.epoch_time_s(), p.cost_per_epoch())
        return (p.cost_per_epoch(), p.epoch_time_s())

    def choose(self, checked: list[PlanPoint]) -> tuple[PlanPoint | None, list[PlanPoint]]:
        """The winner among the checked finalists, and those tied with it.

        Tied: the intervals of the objective's measure (cost for a target, epoch time for a
        budget) overlap, each interval at least ±``RESOLUTION`` of its value (the simulator's
        mean is known to ±2 %; a narrower win is no win). Among the tied points the
        recommendation is the best on the other measure (the fastest of equally cheap ones)."""
        if self.kind == "frontier":
            return None, []
        ok = sorted((p for p in checked if self.feasible(p)), key=self.key)
        if not ok:
            return None, []
        first = self._span(ok[0])
        tied = [p for p in ok if self._span(p)[0] <= first[1] and self._span(p)[1] >= first[0]]
        win = min(tied, key=lambda p: self.key(p)[1:])
        return win, [p for p in tied if p is not win]

    def _span(self, p: PlanPoint) -> tuple[float, float]:
        lo, hi = p.cost_interval if self.kind == "target" else p.epoch_interval_s
        mid = p.cost_per_epoch() if self.kind == "target" else p.epoch_time_s()
        return min(lo, mid * (1 - RESOLUTION)), max(hi, mid * (1 + RESOLUTION))

    def best_achievable(self, points: list[PlanPoint]) -> PlanPoint | None:
        return min(points, key=self._closeness) if points else None

    @staticmethod
    def frontier(points: list[PlanPoint]) -> list[PlanPoint]:
        """Pareto-optimal points: no other is both faster and cheaper; fastest first."""
        out: list[PlanPoint] = []
        for p in sorted(points, key=lambda p: (p.epoch_time_s(), p.cost_per_epoch(), p.workers)):
            if not out or p.cost_per_epoch() < out[-1].cost_per_epoch():
                out.append(p)
        return out


def knee_of(curve: list[PlanPoint], rel: float) -> dict:
    """The smallest W after which no added worker brings ``rel`` of one worker's throughput:
    for every larger W' of the curve, (X(W') − X(W)) / (W' − W) < rel · X(1). Judging against
    every later point, not only the next, keeps a dip (the coarse model's Eq. 5 switching
    regimes) from passing for a knee. The bottleneck is the one just past the knee."""
    one = curve[0].throughput / curve[0].workers
    for i, a in enumerate(curve[:-1]):
        gain = max((b.throughput - a.throughput) / (b.workers - a.workers) for b in curve[i + 1:])
        if gain < rel * one:
            return {"workers": a.workers, "throughput": a.throughput,
                    "bottleneck": curve[i + 1].bottleneck, "gain_per_worker": gain, "one_worker": one}
    last = curve[-1]
    return {"workers": None, "throughput": last.throughput, "bottleneck": last.bottleneck,
            "gain_per_worker": None, "one_worker": one,
            "note": f"still scaling at W = {last.workers}"}
