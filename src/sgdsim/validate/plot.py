"""One PNG per case: throughput against workers, measured as points (each run as a tick), one
line per model, and the fine model's 95 % interval as a band."""
from __future__ import annotations

STYLE = {"fine": ("tab:blue", "-"), "coarse": ("tab:orange", "--"), "lin": ("tab:green", "-."),
         "cynthia": ("tab:red", ":")}


def plot_case(case_result, path: str) -> None:
    """Draw ``case_result`` (a ``CaseResult``) into ``path`` (PNG). Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only, never a window
    import matplotlib.pyplot as plt

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
