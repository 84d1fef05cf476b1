"""``sgdsim predict gpt:...`` (or a Hugging Face config.json): a large model's step on a
layout (``sgdsim.llm``). The profile-based options do not apply and are refused if given."""
from __future__ import annotations

import json

from ..errors import ConfigError
from .common import add_large_model_arguments


def add_llm_arguments(q) -> None:
    g = add_large_model_arguments(q, "tp=8,pp=64,dp=6,mb=1,batch=3072[,schedule=1f1b|gpipe|interleaved,v=2,"
                                     "recompute=full|selective|none,zero=0-3,sp=1,precision=bf16]; dp from --workers")
    g.add_argument("--block-profile", default=None, metavar="FILE.json",
                   help="one block's measured forward and backward times instead of the roofline's "
                        "(sgdsim profile gpt:... --layout tp=..,mb=.. -o FILE.json; default: none)")


def one_gpu_count(workers: str | None) -> int | None:
    """``--workers`` of a large model: one GPU count, or None (tp·pp·dp of ``--layout``)."""
    from ..predict import parse_workers

    counts = parse_workers(workers) if workers else [None]
    if len(counts) != 1:
        raise ConfigError("give one GPU count with --workers for a transformer description")
    return counts[0]


def run_llm(args) -> str:
    from ..llm import device, load_transformer, parse_layout, predict_step

    if args.layout is None:
        raise ConfigError("a transformer description needs --layout (e.g. tp=8,pp=8,mb=1,batch=1536)")
    model = load_transformer(args.profile, args.seq)
    layout = parse_layout(args.layout, one_gpu_count(args.workers))
    dev = device(args.device, args.devices)
    block = None
    if args.block_profile:
        from ..llm.block_profile import load_block
        block = load_block(args.block_profile)
    r = predict_step(model, layout, dev, block)
    if args.format == "table":
        return _table(model, layout, dev, r) + (_block_line(block, args.block_profile) if block else "")
    row = _row(model, layout, dev, r) | {"block_profile": args.block_profile}
    if args.format == "json":
        return json.dumps(row, indent=2)
    keys = [k for k in row if not isinstance(row[k], dict)]  # csv
    return ",".join(keys) + "\n" + ",".join(str(row[k]) for k in keys)


def _row(model, layout, dev, r) -> dict:
    return {"model": model.name, "params": model.params(), "gpus": layout.gpus, "tp": layout.tp,
            "pp": layout.pp, "dp": layout.dp, "micro_batch": layout.mb, "batch": layout.batch,
            "schedule": layout.schedule, "v": layout.v, "recompute": layout.recompute,
            "zero": layout.zero, "device": dev.key, "step_time_s": r.step_s, "tokens_per_s": r.tokens_per_s,
            "achieved_flops_per_gpu": r.achieved_flops_per_gpu, "mfu": r.mfu, "bubble": r.bubble,
            "memory_bytes": r.memory.total, "capacity_bytes": dev.hbm_bytes, "fits": r.fits,
            "parts_s": r.parts_s}


def _table(model, layout, dev, r) -> str:
    lines = [f"{model.name} ({model.params() / 1e9:.1f} B parameters) on {layout.gpus} x {dev.name}: "
             f"{layout.describe(batch=True)}",
             f"step {r.step_s:.2f} s, {r.tokens_per_s:,.0f} tokens/s, "
             f"{r.achieved_flops_per_gpu / 1e12:.0f} TFLOP/s per GPU, MFU {r.mfu:.1%}, "
             f"pipeline bubble {r.bubble:.1%}",
             "memory " + (f"{r.memory.total / (1 << 30):.1f} GiB of {dev.hbm_bytes / (1 << 30):.1f} GiB per device"
                          if r.fits else r.memory.shortfall(dev.hbm_bytes) + ": DOES NOT FIT"),
             "step: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.parts_s.items())]
    return "\n".join(lines)


def _block_line(block, path: str) -> str:
    return (f"\nblock times measured on {block.device} ({path}): forward {block.forward_s * 1e3:.3g} ms, "
            f"backward {block.backward_s * 1e3:.3g} ms per micro-batch; logits, optimizer and "
            f"communication modelled")
