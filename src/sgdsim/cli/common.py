"""What every subcommand shares: the parser class (one-line errors, defaults in the help) and
the executor options. Stage modules (``plan/cli.py``, ``lab/cli.py``, ...) import from here,
never from the package that registers them, so the command modules form no import loop."""
from __future__ import annotations

import argparse
import math
import re
import sys

from ..errors import SgdsimError
from ..spec import EXECUTORS
from ..spec.registries import DEFAULT_EXECUTOR


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option shows its default: appended when the help does not already say it."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        silent = (not action.option_strings or action.required or "default" in text.lower()
                  or d is None or isinstance(d, bool) or d == [] or d == argparse.SUPPRESS)
        return text if silent else f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        self._typed = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):  # one line, exit 2, like every other user error
        self.exit(2, f"sgdsim: error: {one_line(message)}{self._dash_value(message)} "
                     f"(see {self.prog} --help)\n")

    def _dash_value(self, message: str) -> str:
        """argparse reads a value that starts with '-' ('--bandwidth -1Gbps') as an option and
        says only that the option's value is missing: say which word it took for one."""
        m = re.match(r"argument (\S+?)(?:/\S+)?: expected one argument", str(message))
        typed = getattr(self, "_typed", [])
        for i, word in enumerate(typed[:-1]):
            if m and word in m.group(1).split("/") and typed[i + 1].startswith("-"):
                return f" ({typed[i + 1]!r} reads as an option: write {word}={typed[i + 1]})"
        return ""


def one_line(message) -> str:
    """An error names what the user typed, which may hold line breaks: they print escaped."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


def add_executor_arguments(q) -> None:
    q.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="simulate N points at once in local processes (default: one per core)")
    q.add_argument("--backend", default=DEFAULT_EXECUTOR, choices=EXECUTORS.names,
                   help="where simulated points run: local processes, or a Dask cluster")
    q.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="--backend dask: the scheduler, e.g. tcp://10.0.0.1:8786 (default: none)")


def executor_from(args):
    from ..evaluate.executors import make_executor

    return make_executor(args.backend, args.jobs, args.scheduler)


def positive_floats(text: str, option: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise SgdsimError(f"{option} takes numbers separated by commas, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise SgdsimError(f"{option} values must be positive, got {text!r}")
    return values


LARGE_MODEL = ("layout", "device", "devices", "seq")  # the options add_large_model_arguments adds
EITHER = ("profile", "format", "quiet", "command", "handlers")  # a profile's or a large model's


def check_applies(args, defaults: dict, large_model: bool, model_only: tuple = (),
                  either: tuple = ()) -> None:
    """A given option that does not apply to the input, in one line: a profile's option with a
    large model, or a large model's (``LARGE_MODEL`` and the command's ``model_only``) with a
    profile; ``either``: the command's options that apply to both. "Given": not the parser's
    default."""
    own = LARGE_MODEL + model_only
    for dest, value in vars(args).items():
        if dest in EITHER + either or value == defaults.get(dest, value):
            continue
        flag = "--" + dest.replace("_", "-")
        if large_model and dest not in own:
            use = dict.fromkeys(("workers", *own))  # (dict: ordered, without repeats)
            raise SgdsimError(f"{flag} applies to a profile, not to a transformer description (use "
                              f"{', '.join('--' + d.replace('_', '-') for d in use)})")
        if not large_model and dest in own:
            raise SgdsimError(f"{flag} applies to a transformer description (gpt:..., llama:... or a "
                              "config.json), not to a profile")


def add_large_model_arguments(q, layout_help: str):
    """The options of a large model (a gpt:/llama: description or a config.json as PROFILE)
    that ``predict`` and ``plan`` share; returns the group for a command's own."""
    g = q.add_argument_group("large models (a gpt:/llama: description or a config.json as PROFILE)")
    g.add_argument("--layout", default=None, metavar="SPEC",
                   help=layout_help + " (default: none; required with a transformer description)")
    g.add_argument("--device", default=None, metavar="NAME",
                   help="an accelerator of the catalogue: v100-sxm2-32gb, a100-40gb, a100-80gb, h100-sxm, "
                        "h200, b200 (default a100-80gb)")
    g.add_argument("--devices", default=None, metavar="FILE.toml",
                   help="your own device catalogue (default: the bundled one)")
    g.add_argument("--seq", type=int, default=None, metavar="TOKENS",
                   help="training sequence length (default: the description's seq, or a config.json's "
                        "max_position_embeddings)")
    return g
