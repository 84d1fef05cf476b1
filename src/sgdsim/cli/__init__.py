"""``sgdsim`` command line: a thin layer over the Python API (``sgdsim.predict`` & co).

One registry: each command module has ``register(subparsers) -> {name: handler}``; a new
command is one module plus one line in ``COMMANDS`` (with the names it registers, so that a
command's process builds and imports only its own module's parser).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import SgdsimError
from .common import Parser, one_line

COMMANDS = {  # module with register(subparsers) -> {command: handler}: the commands it registers
    "sgdsim.cli.predict_cmd": ("predict",),
    "sgdsim.cli.report_cmd": ("report",),
    "sgdsim.cli.profile_cmds": ("info", "import", "calibrate", "calibrate-threshold"),
    "sgdsim.profiler.cli": ("profile",),
    "sgdsim.plan.cli": ("plan",),
    "sgdsim.scaling.cli": ("optimize",),
    "sgdsim.lab.cli": ("lab", "netbench"),
    "sgdsim.validate.cli": ("validate",),
    "sgdsim.ops.cli": ("ops",),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or, when ``command`` is one, only its module's: a prediction
    need not import the lab's or the operator database's modules to start (~40 ms)."""
    p = Parser(prog="sgdsim", description="Predict distributed SGD training throughput.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    handlers: dict = {}
    for name in [m for m, names in COMMANDS.items() if command in names] or COMMANDS:
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
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
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
