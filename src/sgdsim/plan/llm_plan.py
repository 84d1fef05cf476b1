"""``sgdsim plan gpt:...``: the layout of a large model (``sgdsim.llm.plan``), for a GPU range
and an objective. The profile planner's options do not apply and are refused if given."""
from __future__ import annotations

import json

from ..errors import ConfigError

PLAN_ONLY = ("objective", "price_per_gpu_hour")  # a large model's, besides cli.common.LARGE_MODEL


def add_llm_plan_arguments(g) -> None:
    """``g``: the large-model group (``cli.common.add_large_model_arguments``)."""
    g.add_argument("--objective", default=None, choices=("step-time", "cost-per-token"),
                   help="rank layouts by step time (= tokens/s at a fixed batch) or by GPU-hours per token "
                        "(default step-time)")
    g.add_argument("--price-per-gpu-hour", type=float, default=None, metavar="P",
                   help="price of a GPU per hour, for the cost column (default 1: GPU-hours)")


def run_llm_plan(args) -> str:
    from ..llm import device, load_transformer
    from ..llm.layout import Layout, layout_fields
    from ..llm.plan import check_fits_somewhere, result_rows, search
    from ..predict import parse_workers
    from ..progress import Progress

    if args.layout is None:
        raise ConfigError("a transformer description needs --layout batch=N (sequences per step), "
                          "e.g. --layout batch=1536")
    model = load_transformer(args.profile, args.seq)
    dev = device(args.device, args.devices)
    counts = [n for n in parse_workers(args.workers) if n % dev.gpus_per_node == 0 or n < dev.gpus_per_node]
    if not counts:
        raise ConfigError(f"--workers gives no GPU count that fills nodes of {dev.gpus_per_node}")
    given = layout_fields(args.layout)
    base = Layout(**{**given, "dp": 1})  # dp follows from each GPU count
    fixed = set(given) - {"batch", "dp"}
    with Progress(len(counts), "searching layouts") as bar:
        result = search(model, dev, counts, base, fixed, args.objective or "step-time", args.finalists,
                        progress=bar.advance)
    check_fits_somewhere(result, f"{model.name} on {counts[0]}-{counts[-1]} {dev.key}")
    rows = result_rows(result, args.price_per_gpu_hour or 1.0, model)
    if args.format == "json":
        return json.dumps({"objective": result.objective, "considered": result.considered,
                           "too_big": result.too_big, "finalists": rows}, indent=2)
    head = (f"{model.name} ({model.params() / 1e9:.1f} B parameters), batch {base.batch} x {model.seq} tokens, "
            f"{dev.name}: {result.considered} layouts possible, {result.too_big} do not fit in memory; "
            f"the best {len(rows)} by {result.objective}, simulated:")
    lines = [head, f"{'GPUs':>6} {'step (s)':>9} {'tokens/s':>11} {'MFU':>6} {'GiB/GPU':>8} "
                   f"{'cost/M tokens':>13}  layout"]
    lines += [f"{r['gpus']:>6} {r['step_time_s']:>9.2f} {r['tokens_per_s']:>11,.0f} {r['mfu']:>6.1%} "
              f"{r['memory_gib']:>8.1f} {r['cost_per_million_tokens']:>13.3f}  {r['layout']}" for r in rows]
    return "\n".join(lines)
