"""One PNG per case: throughput against workers, measured as points (each run as a tick), one
line per model, and the fine model's 95 % interval as a band; and one over all cases
(``plot_bias``): the signed error against workers, one line per model through its mean at each
worker count, every point as a marker, and a zero line."""
from __future__ import annotations

from ..evaluate.bias import errors_by_workers

STYLE = {"fine": ("tab:blue", "-"), "coarse": ("tab:orange", "--"), "lin": ("tab:green", "-."),
         "cynthia": ("tab:red", ":")}
BIAS_LINEAR_PCT = 10.0  # the bias plot's y axis is linear within ±10 %, logarithmic beyond
BIAS_TICKS = [s * t for s in (-1, 1) for t in (1000, 500, 200, 100, 50, 20, 10, 5)] + [0]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def plot_case(case_result, path: str) -> None:
    """Draw ``case_result`` (a ``CaseResult``) into ``path`` (PNG). Needs matplotlib."""
    plt = _pyplot()
    case = case_result.case
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    try:
        _draw(ax, case_result)
        ax.set_title(f"{case.name}\n{case.describe()}", fontsize=7)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


def _draw(ax, case_result) -> None:
    models = list(dict.fromkeys(p.model for p in case_result.points))
    for m in models:
        pts = sorted((p.workers, p.predicted) for p in case_result.points if p.model == m)
        color, line = STYLE.get(m, (None, "-"))
        ax.plot([w for w, _ in pts], [y for _, y in pts], line, color=color, marker=".", label=m)
        band = sorted((p.workers, p.low, p.high) for p in case_result.points
                      if p.model == m and p.low is not None and p.high is not None)
        if band:
            ax.fill_between([w for w, _, _ in band], [lo for _, lo, _ in band],
                            [hi for _, _, hi in band], color=color, alpha=0.15,
                            label=f"{m} 95 % interval")
    measured = case_result.measured
    if measured:
        ws = sorted(measured)
        ax.plot(ws, [measured[w] for w in ws], "o", color="black", markersize=7,
                label="measured", zorder=5)
        runs = [(w, x) for w in ws for x in case_result.measured_runs.get(w, [])]
        if any(len(case_result.measured_runs.get(w, [])) > 1 for w in ws):
            ax.plot([w for w, _ in runs], [x for _, x in runs], "_", color="black",
                    markersize=9, label="runs", zorder=5)
    ax.set_xlabel("workers")
    ax.set_ylabel("throughput (examples/s)")
    workers = list(case_result.case.workers)
    if len(workers) <= 16:
        ax.set_xticks(workers)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_bias(points, path: str, title: str = "") -> None:
    """Draw the signed error of ``points`` ((model, workers, measured, predicted), see
    ``bias``) against workers into ``path`` (PNG). Needs matplotlib."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    try:
        _draw_bias(ax, points)
        if title:
            ax.set_title(title, fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


def _draw_bias(ax, points) -> None:
    grouped = errors_by_workers(points)
    ax.axhline(0.0, color="black", linewidth=0.8, zorder=1)
    for m, by_w in grouped.items():
        color, line = STYLE.get(m, (None, "-"))
        ws = list(by_w)
        ax.plot(ws, [sum(e) / len(e) for e in by_w.values()], line, color=color, label=f"{m} (mean)")
        ax.plot([w for w in ws for _ in by_w[w]], [e for w in ws for e in by_w[w]], "o",
                color=color, alpha=0.5, markersize=4)
    workers = sorted({w for by_w in grouped.values() for w in by_w})
    if not workers:
        ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)
    elif len(workers) <= 16:
        ax.set_xticks(workers)
    ax.set_xlabel("workers")
    ax.set_ylabel("error (%): predicted / measured - 1")
    _bias_scale(ax, [e for by_w in grouped.values() for es in by_w.values() for e in es])
    ax.grid(alpha=0.3)
    if grouped:
        ax.legend(fontsize=8)


def _bias_scale(ax, errors: list[float]) -> None:
    """Linear, unless one model is far off: that would flatten the others onto the zero line,
    so beyond ±BIAS_LINEAR_PCT the axis turns logarithmic."""
    low, high = min(errors, default=0.0), max(errors, default=0.0)
    if max(-low, high) <= BIAS_LINEAR_PCT * 5:
        return
    ax.set_yscale("symlog", linthresh=BIAS_LINEAR_PCT, linscale=1.5)
    ax.set_ylim(min(low, 0.0) * 1.4 - 1.0, max(high, 0.0) * 1.4 + 1.0)
    ticks = [t for t in BIAS_TICKS if min(low, 0.0) * 1.2 <= t <= max(high, 0.0) * 1.2]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_ylabel(f"error (%): predicted / measured - 1\n(logarithmic beyond ±{BIAS_LINEAR_PCT:g} %)")
