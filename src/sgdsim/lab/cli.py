"""``sgdsim netbench`` and ``sgdsim lab``: argument parsers and command functions.

Contract: ``register(subparsers)`` adds the two commands to an ``add_subparsers(...)`` object
(nested sub-commands reuse the parser class of the parent, so one-line argparse errors stay
one line) and returns ``{"netbench": cmd_netbench, "lab": cmd_lab}``; each ``cmd_*(args)``
returns an exit code and raises ``SgdsimError`` for user errors, which the caller prints as
one line (exit 2). Every parser also gets ``set_defaults(lab_cmd=...)`` for callers that
dispatch on the namespace instead. ``netbench`` itself lives in ``netbench_cli`` (its table in
``netbench_table``); its names are re-exported here.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from ..units import format_bps
from .netbench_cli import add_netbench_parser, cmd_netbench

__all__ = ["cmd_lab", "cmd_netbench", "main", "register"]


def register(subparsers) -> dict:
    add_netbench_parser(subparsers)
    _lab_parser(subparsers)
    return {"netbench": cmd_netbench, "lab": cmd_lab}


def _lab_parser(sub) -> None:
    lab = sub.add_parser("lab", help="an emulated cluster: namespaces + shaped bridge (root)")
    lsub = lab.add_subparsers(dest="lab_command", required=True, parser_class=type(lab))
    up = lsub.add_parser("up", help="create hosts sgdsim-h0.. on 10.77.0.0/24")
    up.add_argument("--hosts", type=int, default=3, help="number of hosts (workers + PS)")
    up.add_argument("--bandwidth", default="100Mbps", help="rate of every NIC, each direction")
    up.add_argument("--burst", default=None, help="tbf bucket size (default: 1 ms of rate, >= 16KiB)")
    up.add_argument("--queue-latency", default="50ms", help="tbf queue limit as a delay")
    lsub.add_parser("down", help="remove the lab recorded in the state file")
    lsub.add_parser("status", help="show the lab and its qdiscs")
    ex = lsub.add_parser("exec", help="run a command inside lab host I")
    ex.add_argument("index", type=int, help="lab host number (0 = sgdsim-h0)")
    ex.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND ...",
                    help="the command and its arguments (after --)")
    _lab_run_parser(lsub)
    lab.set_defaults(lab_cmd=cmd_lab)


def _lab_run_parser(lsub) -> None:
    run = lsub.add_parser("run", help="train a model in the lab (PS or all-reduce), measure "
                                      "examples/s")
    run.add_argument("model", help="lab:mlp-20mb, lab:mlp-<N>mb, lab:cnn-small or "
                                   "path/file.py:function")
    run.add_argument("--workers", default="1", help="range 1-4, list 1,2,4 or one number")
    run.add_argument("--batch-size", type=int, default=16, help="examples per worker step")
    run.add_argument("--bandwidth", default="100Mbps", help="rate of every NIC, each direction")
    run.add_argument("--arch", default="ps", choices=["ps", "allreduce"],
                     help="parameter servers or ring all-reduce (gloo)")
    run.add_argument("--mode", default="async", choices=["async", "sync"],
                     help="async or sync updates (--arch ps)")
    run.add_argument("--ps-count", type=int, default=1, metavar="M",
                     help="parameter servers (--arch ps): each holds whole layers, placed as "
                          "sgdsim predict --ps-count places them (default 1)")
    run.add_argument("--overlap", action="store_true",
                     help="per-layer overlap of communication and computation")
    run.add_argument("--duration", default="30s", help="length of each run (from the common start)")
    run.add_argument("--warmup", default="5s", help="first part of each run, not measured")
    run.add_argument("--format", default="table", choices=["table", "csv", "json"], help="output format")
    run.add_argument("--record-profile", default=None, metavar="PROFILE.json",
                     help="write an sgdsim profile of the run (--workers 1, --arch ps; default: none)")
    run.add_argument("--calibrate", default=None, metavar="HW.json",
                     help="fit this hardware file to the run (--workers 1; all-reduce: 2) with "
                          "sgdsim calibrate and the model's standalone profile; needs -o (default: none)")
    run.add_argument("-o", "--calibrated-output", default=None, metavar="OUT.json",
                     help="where --calibrate writes the calibrated hardware file (no default: required with --calibrate)")
    run.add_argument("--force", action="store_true",
                     help="overwrite --record-profile's or --calibrated-output's file")


# ----------------------------------------------------------------------------- lab

def cmd_lab(args) -> int:
    return {"up": _lab_up, "down": _lab_down, "status": _lab_status,
            "exec": _lab_exec, "run": _lab_run}[args.lab_command](args)


def _lab_up(args) -> int:
    from .cluster import LabCluster

    lab = LabCluster(args.hosts, args.bandwidth, burst_bytes=args.burst,
                     queue_latency_s=args.queue_latency).up()
    print(f"lab up: {lab.describe()}; state in {lab.state_file}")
    return 0


def _lab_down(args) -> int:
    from .cluster import lab_down

    removed = lab_down()
    print(f"lab down: removed {', '.join(removed)}" if removed else "lab down: no lab was up")
    return 0


def _lab_status(args) -> int:
    from .cluster import lab_status, list_namespaces, state_path

    st = lab_status()
    if st is None:
        others = list_namespaces()
        print(f"no lab is up (no {state_path()})" +
              (f"; foreign namespaces: {', '.join(others)}" if others else ""))
        return 0
    state = "complete" if st["complete"] else "INCOMPLETE (run 'sgdsim lab down')"
    print(f"lab {state}: {st['hosts']} hosts, {format_bps(st['bandwidth_bps'])} per NIC direction, "
          f"tbf burst {st['burst_bytes']} B, queue {st['queue_latency_s'] * 1e3:g} ms")
    for ns in st["namespaces"]:
        mark = "" if ns in st["present"] else "  (missing)"
        print(f"  {ns}{mark}")
        for line in st["qdiscs"].get(ns, []):
            print(f"    {line}")
    return 0


def _lab_exec(args) -> int:
    from .cluster import LabCluster

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise ConfigError("lab exec needs a command, e.g. sgdsim lab exec 0 -- ip addr")
    try:
        return LabCluster.attach().run(args.index, argv).returncode
    except OSError as exc:
        raise ConfigError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _lab_run(args) -> int:
    from ..predict import parse_workers
    from .train.cli import run_command

    return run_command(args, parse_workers(args.workers))


def main(argv: list[str] | None = None) -> int:
    """``python -m sgdsim.lab.cli``: the main command line (which registers us)."""
    from ..cli import main as sgdsim_main

    return sgdsim_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
