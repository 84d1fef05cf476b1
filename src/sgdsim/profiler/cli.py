"""The ``sgdsim profile`` subcommand: ``register(subparsers)`` and ``cmd_profile(args)``.

Registered in ``sgdsim.cli.COMMANDS``; ConfigError/ProfileError print one line and exit 2 there.
"""
from __future__ import annotations


from ..errors import ProfileError
from ..outputs import check_output_path


def register(subparsers):
    """Add ``profile`` to ``subparsers`` (whose parser_class the caller chose)."""
    p = subparsers.add_parser(
        "profile", help="profile one worker of a PyTorch training job into a profile",
        description="Run a PyTorch training step with per-layer hooks and write an sgdsim "
                    "profile (ops named as by 'sgdsim import pipedream').")
    p.add_argument("model", help="zoo:NAME[?key=value&...] (mlp, small-cnn, small-resnet, "
                                 "resnet50, bert-base, gpt2, vit-base), FILE.py:FUNCTION or "
                                 "MODULE:FUNCTION returning (model, (inputs, target), loss_fn)")
    p.add_argument("--batch-size", type=int, required=True, help="per-worker mini-batch")
    p.add_argument("--steps", type=int, default=30, help="measured steps (default 30)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up steps (default 5)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's own choice)")
    ov = p.add_mutually_exclusive_group()
    ov.add_argument("--overlap", dest="overlap", action="store_true", default=True,
                    help="communication overlaps computation layer by layer (default)")
    ov.add_argument("--no-overlap", dest="overlap", action="store_false",
                    help="pull all parameters before, push all gradients after the pass")
    p.add_argument("-o", "--output", required=True, help="profile file (.json or .json.gz)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    return {"profile": cmd_profile}


def cmd_profile(args) -> int:
    from ..profile.io import save_profile
    from ..progress import say, status
    from .api import profile_model

    _check_output(args.output, args.force)  # before minutes of profiling, not after
    say(f"profiling {args.model}, batch {args.batch_size}: {args.warmup} warm-up and "
        f"{args.steps} measured steps, each with and without hooks")
    with status(f"profiling {args.model}"):
        run = profile_model(args.model, args.batch_size, steps=args.steps, warmup=args.warmup,
                            device=args.device, threads=args.threads, overlap=args.overlap)
    save_profile(run.profile, args.output, overwrite=args.force)
    prof = run.profile
    layers = len({op.layer for op in prof.ops})
    say(f"wrote {args.output}: {prof.job.model}, {layers} layers, {prof.n_ops} ops, "
          f"{prof.model_bytes() / 1e6:.2f} MB of parameters, batch {prof.job.batch_size}, "
          f"forward+backward {prof.mean_compute_s() * 1e3:.2f} ms")
    say(run.overhead_line())
    return 0


def _check_output(path: str, force: bool) -> None:
    check_output_path(path, force, exists_error=ProfileError)
