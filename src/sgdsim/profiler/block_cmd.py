"""``sgdsim profile gpt:...``: one block of a large model, timed here (``llm/torch_block.py``),
written for ``sgdsim predict gpt:... --block-profile``."""
from __future__ import annotations

from ..errors import ConfigError


def cmd_block(args) -> int:
    from ..llm import load_transformer
    from ..llm.block_profile import block_fields, save_block
    from ..llm.torch_block import measure_block
    from ..ops.timing_env import timing_settings, torch_module
    from ..progress import Progress, say

    given = [flag for flag, value in (("--batch-size", args.batch_size), ("--estimate", args.estimate),
                                      ("--db", args.db), ("--target", args.target),
                                      ("--no-overlap", not args.overlap),
                                      ("--retries", args.retries is not None),
                                      ("--keep-memory", args.keep_memory),
                                      ("--autocast", args.autocast)) if value]
    if given:
        raise ConfigError(f"{given[0]} does not apply to a large model's block (use --layout tp=..,mb=..)")
    model = load_transformer(args.model, args.seq)
    fields = block_fields(args.layout)
    repeats = 10 if args.steps is None else args.steps
    warmup = 2 if args.warmup is None else args.warmup
    if repeats < 3 or warmup < 0:
        raise ConfigError("--steps must be at least 3 and --warmup at least 0")
    torch = torch_module()
    device = args.device or "cpu"
    with timing_settings(torch, args.threads or torch.get_num_threads()), \
            Progress(warmup + repeats, f"timing one block of {model.name} on {device}") as bar:
        times = measure_block(model, fields["tp"], fields["mb"], fields["precision"], device,
                              repeats, warmup, progress=bar.advance)
    save_block(times, args.output)
    say(f"wrote {args.output}: one block of {model.name} (tp={times.tp}, mb={times.mb}, {times.precision}) "
        f"on {times.device}: forward {times.forward_s * 1e3:.3g} ms, backward {times.backward_s * 1e3:.3g} ms, "
        f"attention core {times.core_forward_s * 1e3:.3g} ms (median of {repeats}, spread {times.spread:.0%})")
    if times.spread > 0.2:
        say(f"the repetitions spread {times.spread:.0%}: the machine was busy; profile again when it is quiet")
    return 0
