"""``sgdsim validate GRID``: argument parser and command function.

Contract (as ``sgdsim.lab.cli``): ``register(subparsers)`` adds the command to an
``add_subparsers(...)`` object and returns ``{"validate": cmd_validate}``; ``cmd_validate(args)``
returns an exit code and raises ``SgdsimError`` for user errors, which the caller prints as one
line (exit 2). The parser also gets ``set_defaults(validate_cmd=cmd_validate)``.
"""
from __future__ import annotations

import sys

from ..errors import ConfigError
from ..progress import say


def register(subparsers) -> dict:
    p = subparsers.add_parser(
        "validate", help="measure a grid of cases in the lab and compare with every model",
        description="Profile each case of GRID once, predict it with every model, measure it "
                    "in the emulated lab (root), and write points.csv, summary.md/.json and a "
                    "plot per case (docs/validation/README.md).")
    p.add_argument("grid", help="grid file (.toml or .json)")
    p.add_argument("-o", "--output", default="validation-out", metavar="OUTDIR",
                   help="output folder (default validation-out/)")
    p.add_argument("--force", action="store_true", help="overwrite the files of an earlier run")
    p.add_argument("--resume", action="store_true",
                   help="continue a stopped run of the same GRID in OUTDIR: keep the points its "
                        "points.csv holds and its profiles, measure the rest (default: start "
                        "afresh, and refuse an OUTDIR holding an earlier run's files)")
    p.add_argument("--dry-run", action="store_true",
                   help="profile and predict only: no lab, nothing measured")
    p.add_argument("--models", default="all", metavar="fine,coarse,lin,cynthia",
                   help="models to compare (default all; those that cannot honour a case are skipped)")
    p.add_argument("--measured", action="append", default=None, metavar="POINTS.csv",
                   help="reuse the lab runs of an earlier run's points.csv instead of measuring "
                        "(no lab, no root); its profiles/ folder is used when present; give it "
                        "again to pool the runs of later measurements of the same points "
                        "(default: measure)")
    p.set_defaults(validate_cmd=cmd_validate)
    return {"validate": cmd_validate}


def cmd_validate(args, *, profile_fn=None, measure_fn=None, lab_fn=None) -> int:
    """The command; the keyword hooks replace profiling, measuring and the lab (tests)."""
    from .grid import load_grid
    from .report import summary_markdown
    from .run import parse_models, run_validation

    models = parse_models(args.models)
    grid = load_grid(args.grid)
    resume = getattr(args, "resume", False)
    if getattr(args, "measured", None):
        if args.dry_run:
            raise ConfigError("--measured replays measurements; --dry-run measures nothing: pick one")
        if resume:
            raise ConfigError("--measured replays an earlier run into a new OUTDIR; --resume "
                              "continues the one in OUTDIR: pick one")
        saved_fn, measure_fn, lab_fn = replay_hooks(args.measured, grid)
        profile_fn = profile_fn or saved_fn
    result = run_validation(grid, args.output, models=models, dry_run=args.dry_run,
                            force=args.force, resume=resume, profile_fn=profile_fn,
                            measure_fn=measure_fn, lab_fn=lab_fn)
    print(summary_markdown(result, with_details=result.dry_run), end="")
    say(f"wrote {len(result.files)} files to {args.output}")
    return 0


def replay_hooks(points_csv, grid):
    """``profile_fn``, ``measure_fn`` and ``lab_fn`` that replay an earlier run's points.csv
    and profiles (``--measured``): the models again, without the lab. Several files pool their
    runs; the profiles are the first file's."""
    from .run import measured_from_csv

    paths = [points_csv] if isinstance(points_csv, str) else list(points_csv)
    return (_saved_profiles(paths[0]), *measured_from_csv(paths, grid))


def replay(grid, points_csv, output: str, models=None):
    """``sgdsim validate GRID -o OUTPUT --measured POINTS.csv --force [--models M,...]`` for a
    grid object (the lab scripts change its cases first), quietly; returns the result."""
    from .run import MODELS, run_validation

    profile_fn, measure_fn, lab_fn = replay_hooks(points_csv, grid)
    return run_validation(grid, output, models=models or MODELS, force=True, log=lambda *a: None,
                          profile_fn=profile_fn, measure_fn=measure_fn, lab_fn=lab_fn)


def _saved_profiles(points_csv: str):
    """The profiles an earlier run used (``profiles/<case>.json`` next to its points.csv)."""
    import os

    from .resume import saved_profiles
    from .run import default_profile

    folder = os.path.join(os.path.dirname(os.path.abspath(points_csv)), "profiles")
    return saved_profiles(folder, default_profile)


def main(argv: list[str] | None = None) -> int:
    """``python -m sgdsim.validate.cli``: the main command line (which registers us)."""
    from ..cli import main as sgdsim_main

    return sgdsim_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
