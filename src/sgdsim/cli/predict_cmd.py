"""``sgdsim predict``: the command and its output; its options are ``model_options.py``'s."""
from __future__ import annotations

import os

from .common import check_applies
from .llm_cmd import add_llm_arguments, run_llm
from .model_options import add_model_arguments, run_prediction
from .tables import format_points
from ..progress import say


def register(sub) -> dict:
    q = sub.add_parser("predict", help="predict throughput per worker count (simulator and models)",
                       description="Predict training throughput for each worker count from a "
                                   "one-worker profile.")
    q.add_argument("profile", nargs="?", help="profile JSON (.json or .json.gz), or give --coarse; or a "
                                              "large model: gpt:layers=..,hidden=..,heads=..,seq=..,vocab=.., "
                                              "llama:..., or a Hugging Face config.json (with --layout)")
    add_model_arguments(q)
    add_llm_arguments(q)
    q.add_argument("--format", default="table", choices=["table", "csv", "json"], help="output format")
    q.add_argument("--timeline", default=None, metavar="FILE.json",
                   help="write a Chrome/Perfetto trace of each simulated point (default: none)")
    q.add_argument("--report", default=None, metavar="FILE.html",
                   help="also write a self-contained HTML report (default: none)")
    q.add_argument("--force", action="store_true",
                   help="overwrite existing --timeline and --report files")
    defaults = {a.dest: a.default for a in q._actions}
    return {"predict": lambda args: cmd_predict(args, defaults)}


def cmd_predict(args, defaults: dict | None = None) -> int:
    from ..llm import is_description

    llm = is_description(args.profile)
    check_applies(args, defaults or {}, llm, model_only=("block_profile",), either=("workers",))
    if llm:
        print(run_llm(args))
        return 0
    return _cmd_profile(args)


def _cmd_profile(args) -> int:
    from ..outputs import check_distinct_outputs
    from ..timeline import write_chrome_trace

    check_distinct_outputs(("--timeline", args.timeline), ("--report", args.report))  # first

    points, targets = run_prediction(args, report=args.report)
    print(format_points(points, args.format))
    for pt in points:
        if pt.timeline is not None and targets:
            target = targets.get(pt.workers) or next(iter(targets.values()))
            n = write_chrome_trace(pt.timeline, target, overwrite=args.force)
            say(f"wrote {n} op slices to {target} (open in https://ui.perfetto.dev)")
    if args.report is not None:
        from .report_cmd import write_report

        timeline = next(iter(targets.values()), None) if targets else None
        if timeline is not None:  # the link works wherever the two files are opened from
            timeline = os.path.relpath(timeline, os.path.dirname(os.path.abspath(args.report)))
        write_report(args, [(args.profile or "coarse", points)], args.report, timeline)
    return 0
