"""Every option of every command has help text that states its default."""
from __future__ import annotations

import argparse

import pytest

from sgdsim.cli import build_parser
from sgdsim.cli.common import HelpFormatter


def _actions(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _actions(child, path + (name,))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), parser, action


def _in_required_group(parser, action) -> bool:
    return any(action in g._group_actions and g.required
               for g in parser._mutually_exclusive_groups)


ALL = list(_actions(build_parser()))


def test_the_walk_sees_every_command():
    commands = {path.split(" ")[0] for path, _, _ in ALL}
    assert {"predict", "report", "plan", "optimize", "import", "info", "calibrate",
            "calibrate-threshold", "profile", "netbench", "lab", "validate"} <= commands


@pytest.mark.parametrize("path,parser,action", ALL,
                         ids=[f"{p} {a.option_strings[-1] if a.option_strings else a.dest}"
                              for p, _, a in ALL])
def test_option_has_help_and_default(path, parser, action):
    text = HelpFormatter("sgdsim")._get_help_string(action) or ""
    assert text.strip(), f"{path}: {action.dest} has no help"
    flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
    if action.option_strings and not (flag or action.required or _in_required_group(parser, action)):
        assert "default" in text.lower(), f"{path} {action.option_strings[-1]}: no default in {text!r}"


def test_defaults_render_in_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["predict", "--help"])
    out = capsys.readouterr().out
    assert "(default: async)" in out and "(default: table)" in out
