"""A plan as text, as JSON, and as a figure."""
from __future__ import annotations

import json
import math

from ..units import format_bandwidth, format_duration_s
from .objective import PlanPoint
from .search import PlanResult

MAX_FRONTIER_ROWS = 12


def to_json(r: PlanResult) -> str:
    obj = r.request.objective
    return json.dumps(_clean({
        "objective": {"kind": obj.kind, "target_epoch_time_s": obj.target_epoch_time_s,
                      "budget_per_epoch": obj.budget_per_epoch},
        "dataset_size": r.request.dataset_size,
        "overlap": all(s.overlap for s in r.request.strategies),
        "recommended": r.recommended.to_dict() if r.recommended else None,
        "ties": [p.to_dict() for p in r.ties],
        "best_achievable": r.best_achievable.to_dict() if r.best_achievable else None,
        "finalists": [p.to_dict() for p in r.checked],
        "frontier": [p.to_dict() for p in r.frontier],
        "knee": r.knees,
        "infeasible": r.infeasible,
    }), indent=2, allow_nan=False)


def _clean(x):
    """JSON has no infinity: an epoch that never ends is null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def to_text(r: PlanResult, currency: str = "") -> str:
    lines = [_headline(r), ""]
    lines += _answer(r, currency)
    if r.checked:
        margin = r.request.control.margin
        m = margin.model_error_rel
        lines += ["", "Finalists, simulated (95 % intervals of the simulator's runs"
                  + (f"; the model's own error, ±{m:.1%} {margin.source}, applies to all alike"
                     if m > 0 else "")
                  + "):", _table(r.checked, currency)]
    front = r.frontier
    shown = front if len(front) <= MAX_FRONTIER_ROWS else \
        [front[round(i * (len(front) - 1) / (MAX_FRONTIER_ROWS - 1))] for i in range(MAX_FRONTIER_ROWS)]
    lines += ["", f"Pareto frontier of epoch time and cost (coarse model, {len(front)} points"
              + (f", {len(shown)} shown; --format json has all" if len(shown) < len(front) else "") + "):",
              _table(shown, currency)]
    lines += ["", f"Knees (one more worker adds < {r.request.knee_rel:.0%} of one worker's throughput; coarse model):"]
    for name, k in r.knees.items():
        lines.append(f"  {name}: " + (f"W = {k['workers']} ({k['throughput']:.1f} examples/s), bottleneck "
                                      f"{k['bottleneck']}" if k["workers"] else k["note"]))
    lines += [f"  skipped {why}" for why in r.infeasible]
    return "\n".join(lines)


def _headline(r: PlanResult) -> str:
    req, obj = r.request, r.request.objective
    if obj.kind == "target":
        what = f"the cheapest configuration with an epoch under {format_duration_s(obj.target_epoch_time_s or 0)}"
    elif obj.kind == "budget":
        what = f"the fastest configuration costing at most {obj.budget_per_epoch:g} per epoch"
    else:
        what = "the trade-off between epoch time and cost (no objective given)"
    serial = "" if all(s.overlap for s in req.strategies) else "; transfers after the step's compute (--no-overlap)"
    return f"Plan: {what}; {req.dataset_size:,} examples per epoch{serial}."


def _answer(r: PlanResult, currency: str) -> list[str]:
    obj = r.request.objective
    if obj.kind == "frontier":
        return ["Give --target-epoch-time or --budget-per-epoch for one recommendation."]
    if r.recommended is None:
        b = r.best_achievable
        reach = "" if b is None else (f" The best achievable: {_describe(b, currency)}.")
        return ["No configuration meets the objective." + reach]
    out = [f"Recommended: {_describe(r.recommended, currency)}."]
    if r.ties:
        out.append("Tied with it (the intervals overlap, the simulator cannot tell them apart):")
        out += [f"  {_describe(p, currency)}" for p in r.ties]
    return out


def _describe(p: PlanPoint, currency: str) -> str:
    s = p.strategy
    ps = f" + {p.ps_nodes} PS" if p.ps_nodes else ""
    lo, hi = p.epoch_interval_s
    span = f" [{format_duration_s(lo)}, {format_duration_s(hi)}]" if p.model == "fine" else ""
    nodes = f" on {p.worker_nodes} node{'s' if p.worker_nodes > 1 else ''}" \
        if p.cluster.nodes.gpus_per_node > 1 else ""
    return (f"{s.label}, {p.workers} worker{'s' if p.workers > 1 else ''}{nodes}{ps} at "
            f"{format_bandwidth(p.cluster.link.bandwidth_Bps)}: "
            f"{p.throughput:.1f} examples/s, epoch {format_duration_s(p.epoch_time_s())}{span}, "
            f"{currency}{p.cost_per_epoch():.2f} per epoch, bottleneck {p.bottleneck} ({p.model} model)")


def _workers(p: PlanPoint) -> str:
    return f"{p.workers} ({p.worker_nodes} nodes)" if p.cluster.nodes.gpus_per_node > 1 else str(p.workers)


def _table(points: list[PlanPoint], currency: str) -> str:
    head = ["strategy", "workers", "PS", "bandwidth", "examples/s", "95% interval", "epoch",
            "cost/epoch", "bottleneck"]
    body = [[p.strategy.label, _workers(p), str(p.ps_nodes), format_bandwidth(p.cluster.link.bandwidth_Bps),
             f"{p.throughput:.1f}",
             f"[{p.ci_low:.1f}, {p.ci_high:.1f}]" if p.model == "fine" else "-",
             format_duration_s(p.epoch_time_s()), f"{currency}{p.cost_per_epoch():.2f}", p.bottleneck]
            for p in points]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join(fmt.format(*row) for row in [head, *body])


def plot(r: PlanResult, curves: dict, path: str, bandwidth_Bps: float) -> None:
    """Throughput against workers per strategy at ``bandwidth_Bps`` (coarse lines; simulated
    points with their interval bands; other bandwidths dotted), knees marked, the
    recommendation starred; cost per epoch below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .search import knee_key

    fig, (ax, cost) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    for i, strategy in enumerate(r.request.strategies):
        color = f"C{i % 10}"
        for cluster in r.request.clusters:
            main = cluster.link.bandwidth_Bps == bandwidth_Bps
            line = sorted((p for p in r.points if p.strategy == strategy
                           and p.cluster.link.bandwidth_Bps == cluster.link.bandwidth_Bps), key=lambda p: p.workers)
            if not line:
                continue
            ws = [p.workers for p in line]
            style = dict(color=color, lw=1.2 if main else 0.8, ls="-" if main else ":")
            label = strategy.label + ("" if main else f" @ {format_bandwidth(cluster.link.bandwidth_Bps)}")
            ax.plot(ws, [p.throughput for p in line], label=label, **style)
            cost.plot(ws, [p.cost_per_epoch() for p in line], **style)
            k = r.knees.get(knee_key(r.request, strategy, cluster.link.bandwidth_Bps))
            if main and k and k.get("workers"):
                ax.plot([k["workers"]], [k["throughput"]], "v", color=color, ms=9, mec="black")
        fine = curves.get(strategy, [])
        if fine:
            fw = [p.workers for p in fine]
            ax.fill_between(fw, [p.ci_low for p in fine], [p.ci_high for p in fine], color=color, alpha=0.2)
            ax.plot(fw, [p.throughput for p in fine], "o", color=color, ms=4)
    if r.recommended is not None:
        p = r.recommended
        ax.plot([p.workers], [p.throughput], "*", color="gold", ms=18, mec="black", label="recommended")
        cost.plot([p.workers], [p.cost_per_epoch()], "*", color="gold", ms=18, mec="black")
    ax.set_yscale("log")
    cost.set_yscale("log")
    ax.set_ylabel("examples/s")
    ax.set_title(f"{format_bandwidth(bandwidth_Bps)}: coarse lines, simulated points with 95 % bands, "
                 "▼ knee", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    cost.set_xlabel("workers")
    cost.set_ylabel("cost per epoch")
    ax.grid(alpha=0.3)
    cost.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
