"""Tianshu's Table 3 on measured data: per operator type, held-out error with and without the
principal component. The same split trains both (the other ``holdout`` share judges them) and,
as in the paper, the no-PC model has the *same architecture* as the best PC model (it is only
fine-tuned: initial weights and L2 penalty), so the PC is the one difference."""
from __future__ import annotations

import time
from statistics import NormalDist

import numpy as np

from .evaluation import evaluate, holdout_split
from .model import train


def table3_row(records, shape_dims, seed: int, budget_s: float, holdout: float = 0.1) -> dict:
    """One row: ``records`` are one operator type and dtype; ``budget_s`` is per training."""
    start = time.perf_counter()
    fit, test = holdout_split(records, holdout, np.random.default_rng(seed))
    with_pc = train(fit, shape_dims, np.random.default_rng([seed, 1]), budget_s, use_pc=True)
    layers, neurons = (int(v) for v in with_pc.stats["arch"][1:].split("N"))
    no_pc = train(fit, shape_dims, np.random.default_rng([seed, 2]), budget_s, use_pc=False,
                  arch=(layers, neurons))
    shipped = train(fit, shape_dims, np.random.default_rng([seed, 3]), budget_s, use_prior="auto")
    a, b = evaluate(with_pc, test), evaluate(no_pc, test)
    return {"op": records[0].op, "dtype": records[0].dtype, "samples": len(records),
            "held_out": len(test), "arch": with_pc.stats["arch"], "pc": with_pc.stats["pc"],
            "error": a["fwd_mean"], "error_max": a["fwd_max"], "bwd_error": a["bwd_mean"],
            "error_median": a["fwd_median"], "shipped_median": evaluate(shipped, test)["fwd_median"],
            "shipped_arch": shipped.stats["arch"],
            "sum_error": a["sum_mean"], "weighted_error": a["sum_weighted"],
            "no_pc_error": b["fwd_mean"], "no_pc_weighted_error": b["sum_weighted"],
            "no_pc_bwd_error": b["bwd_mean"], "no_pc_sum_error": b["sum_mean"],
            "train_s": with_pc.stats["train_s"], "total_s": time.perf_counter() - start,
            "budget_hit": with_pc.stats["budget_hit"] or no_pc.stats["budget_hit"]}


def table3(groups: dict, shape_dims_of, seed: int = 0, budget_s: float = 60.0,
           holdout: float = 0.1) -> list[dict]:
    """Rows for ``groups`` ({(op, dtype): records}); ``shape_dims_of(op)`` names the op's
    tensor dimensions (``optypes.REGISTRY[op].shape_dims``)."""
    return [table3_row(recs, shape_dims_of(op), seed, budget_s, holdout)
            for (op, _), recs in sorted(groups.items())]


# Relative standard error of the median of n values |x|, x normal: 1 / (2 f(m) m sqrt(n)), with
# m the median of |x| (the normal's 75th percentile) and f(m) = 2 phi(m) its density. Both
# medians the verdict compares are of such values (a held-out error, a retest difference) to a
# first order. At 10-20 values it is 6-10 % wider than simulated medians
# (tests/test_eval_verdict.py): the verdict errs towards undecided.
_M = NormalDist().inv_cdf(0.75)
MEDIAN_REL_SE = 1.0 / (4.0 * NormalDist().pdf(_M) * _M)  # 1.1664
DECIDED_Z = NormalDist().inv_cdf(0.95)  # one-sided 95 %: nearer its bar than this, undecided


def verdict(held: float, n_held: int, retest: float, n_retest: int | None) -> str:
    """``yes`` or ``**no**`` where the held-out median is within 1.5x the retest median or
    not, or ``undecided`` where the two are nearer each other than their samples can tell
    (a held-out median of 10 rows and a retest of 10 are each known to about ±37 %). A
    retest stored without its row count is judged as it stands."""
    bar = 1.5 * retest
    if n_retest is None or held <= 0 or bar <= 0 or n_held < 1:
        return "yes" if held <= bar else "**no**"
    se = MEDIAN_REL_SE * float(np.sqrt(1.0 / n_held + 1.0 / n_retest))
    z = float(np.log(held / bar)) / se
    if abs(z) >= DECIDED_Z:
        return "yes" if z < 0 else "**no**"
    return f"undecided (each median ±{DECIDED_Z * se:.0%}; more rows: --holdout, ops retest --samples)"


def _against_noise(rows: list[dict], retests: dict) -> str:
    """The held-out median forward error of the estimator ``ops train`` ships (``--prior
    auto``; the table's PC network beside it) against 1.5× the type's test-retest median
    (``ops retest``): within it, the estimator is as good as the data allow."""
    lines = ["| operator | dtype | held-out median error fwd, ops train's estimator (model) | "
             "the PC network's | test-retest median fwd (rows) | within 1.5× |", "|---|---|---|---|---|---|"]
    for r in rows:
        again = retests.get((r["op"], r["dtype"]))
        if again is None:
            noise, judged = "-", "no retest (sgdsim ops retest)"
        else:
            n = again.get("rows")
            noise = f"{again['fwd_median']:.1%}" + (f" ({n})" if n else "")
            judged = verdict(r["shipped_median"], r["held_out"], again["fwd_median"], n)
        lines.append(f"| {r['op']} | {r['dtype']} | {r['shipped_median']:.1%} ({r['shipped_arch']}) | "
                     f"{r['error_median']:.1%} | {noise} | {judged} |")
    return "\n".join(lines)


def render(rows: list[dict], retests: dict | None = None) -> str:
    """Markdown table, the paper's columns (best model, error, no-PC error) and more; with
    ``retests`` ({(op, dtype): ops retest's values}), each type against its noise floor."""
    lines = ["| operator | dtype | samples (held out) | best model | principal component | "
             "error fwd (max) | error bwd | time-weighted | no-PC error fwd | no-PC error bwd | "
             "no-PC time-weighted | train s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['dtype']} | {r['samples']} ({r['held_out']}) | "
                     f"{r['arch']} | `{r['pc']}` | {r['error']:.2%} ({r['error_max']:.0%}) | "
                     f"{r['bwd_error']:.2%} | {r['weighted_error']:.2%} | {r['no_pc_error']:.2%} | "
                     f"{r['no_pc_bwd_error']:.2%} | {r['no_pc_weighted_error']:.2%} | "
                     f"{r['train_s']:.0f} |")
    if rows:
        mean = {k: float(np.mean([r[k] for r in rows]))
                for k in ("error", "bwd_error", "weighted_error", "no_pc_error", "no_pc_bwd_error",
                          "no_pc_weighted_error")}
        lines.append(f"| **average** | | | | | **{mean['error']:.2%}** | "
                     f"{mean['bwd_error']:.2%} | {mean['weighted_error']:.2%} | "
                     f"{mean['no_pc_error']:.2%} | {mean['no_pc_bwd_error']:.2%} | "
                     f"{mean['no_pc_weighted_error']:.2%} | |")
    if retests is not None:
        lines += ["", _against_noise(rows, retests)]
    return "\n".join(lines) + "\n"
