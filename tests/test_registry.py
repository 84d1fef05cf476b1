"""Registries own their names: one list per kind of plug-in, read by the CLI, the specs and
the planner; an unknown name is one line that lists the known ones."""
from __future__ import annotations

import subprocess
import sys

import pytest

from sgdsim.errors import ConfigError
from sgdsim.plan.search import candidates, strategy_names
from sgdsim.spec import ARCHITECTURES, COLLECTIVES, ORDERS, SHARINGS, STREAMS, Strategy
from sgdsim.spec.registry import Registry

PROFILE = "examples/profiles/alexnet.json"


def test_registry_loads_its_home_on_first_lookup_and_refuses_unknown_names():
    reg = Registry("test plug-in", "--thing", home="json")  # importing json registers nothing
    reg.register("a", 1)
    reg.register("b", 2)
    assert reg.names == ("a", "b") and reg["b"] == 2 and "a" in reg and "c" not in reg
    with pytest.raises(ConfigError, match=r"unknown --thing 'c' \(choose from a, b\)"):
        reg["c"]
    with pytest.raises(ValueError):
        reg.register("a", 3)


@pytest.mark.parametrize("option,registry", [("--arch", ARCHITECTURES), ("--sharing", SHARINGS),
                                             ("--collective", COLLECTIVES), ("--streams", STREAMS),
                                             ("--order", ORDERS)])
def test_cli_refuses_an_unknown_name_in_one_line_listing_the_registry(option, registry):
    out = subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", PROFILE, option, "bogus",
                          "--workers", "2"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("sgdsim: error:")
    for name in registry.names:
        assert f"'{name}'" in out.stderr


@pytest.mark.parametrize("field,registry", [("arch", ARCHITECTURES), ("sharing", SHARINGS),
                                            ("collective", COLLECTIVES), ("streams", STREAMS),
                                            ("order", ORDERS)])
def test_a_spec_refuses_an_unknown_name_listing_the_registry(field, registry):
    with pytest.raises(ConfigError) as e:
        Strategy(**{field: "bogus"})
    assert "\n" not in str(e.value) and all(n in str(e.value) for n in registry.names)


def test_cli_choices_are_the_registries():
    from sgdsim.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    predict = sub.choices["predict"]
    choices = {a.dest: tuple(a.choices) for a in predict._actions if a.choices}
    assert choices["arch"] == ARCHITECTURES.names and choices["sharing"] == SHARINGS.names
    assert choices["collective"] == COLLECTIVES.names and choices["streams"] == STREAMS.names
    assert choices["order"] == ORDERS.names


def test_planner_searches_every_architecture_in_every_mode_it_runs():
    names = strategy_names()
    assert len(names) == sum(len(a.modes) for a in ARCHITECTURES.values())
    archs = {s.arch for s in candidates()}
    assert archs == set(ARCHITECTURES.names)
    for s in candidates(max_ps=3):  # servers: async with 1..3 of them, sync with one
        if "ps_count" in s.architecture.options:
            assert s.ps_count in ((1, 2, 3) if s.mode == "async" else (1,))


def test_another_architectures_option_is_refused_not_ignored():
    with pytest.raises(ConfigError, match="--collective applies to --arch allreduce"):
        Strategy(arch="ps", collective=COLLECTIVES.names[-1])
    with pytest.raises(ConfigError, match="--ps-count"):
        Strategy(arch="allreduce", mode="sync", ps_count=2)


def test_threads_looking_up_at_once_in_a_fresh_process_all_find_the_plug_ins():
    """A fresh Dask worker runs a point's replications on threads: the first lookups race
    the import of the plug-ins' home (once seen as "unknown --order 'profiled' (choose from )")."""
    script = (
        "import threading\n"
        "from sgdsim.spec import ORDERS, SHARINGS\n"
        "errors = []\n"
        "start = threading.Barrier(8)\n"
        "def look():\n"
        "    start.wait()\n"
        "    try:\n"
        "        ORDERS['profiled']; SHARINGS['ps']\n"
        "    except Exception as e:\n"
        "        errors.append(repr(e))\n"
        "threads = [threading.Thread(target=look) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(len(errors), errors[:1])\n"
    )
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("0 "), out.stdout


def test_each_command_module_registers_the_names_the_cli_lists():
    """``cli.COMMANDS`` names each module's commands so that a command builds only its own
    module's parser; a module that registers another name must be listed with it."""
    import importlib

    from sgdsim.cli import COMMANDS, build_parser
    from sgdsim.cli.common import Parser

    for module, names in COMMANDS.items():
        sub = Parser(prog="x").add_subparsers(dest="command", parser_class=Parser)
        assert sorted(importlib.import_module(module).register(sub)) == sorted(names), module
        for name in names:  # the one-module parser knows the command, and only its module's
            one = next(a for a in build_parser(name)._actions if a.dest == "command")
            assert name in one.choices and set(one.choices) == set(names)
    every = next(a for a in build_parser("no-such-command")._actions if a.dest == "command")
    assert set(every.choices) == {n for names in COMMANDS.values() for n in names}
