"""``sgdsim`` command line: a thin layer over the Python API (``sgdsim.predict`` & co).

One registry: each command module has ``register(subparsers) -> {name: handler}``; a new
command is one module plus one line in ``COMMANDS``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import SgdsimError
from .common import Parser, one_line

COMMANDS = (  # modules with register(subparsers) -> {command: handler}
    "sgdsim.cli.predict_cmd",
    "sgdsim.cli.report_cmd",
    "sgdsim.cli.profile_cmds",
    "sgdsim.profiler.cli",
    "sgdsim.plan.cli",
    "sgdsim.scaling.cli",
    "sgdsim.lab.cli",
    "sgdsim.validate.cli",
    "sgdsim.ops.cli",
)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="sgdsim", description="Predict distributed SGD training throughput.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    handlers: dict = {}
    for name in COMMANDS:
        handlers.update(importlib.import_module(name).register(sub))
    _add_quiet(p)
    p.set_defaults(handlers=handlers)
    return p


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` on every command (after its name, where users type it)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        parser.add_argument("-q", "--quiet", action="store_true",
                            help="no progress bars or notices on stderr")
    for action in subs:
        for child in action.choices.values():
            _add_quiet(child)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .. import progress

    progress.configure(getattr(args, "quiet", False))
    try:
        return args.handlers[args.command](args)
    except SgdsimError as e:
        print(f"sgdsim: error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sgdsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
