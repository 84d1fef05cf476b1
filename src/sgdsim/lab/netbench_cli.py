"""``sgdsim netbench``: its argument parser and command function (``lab.cli`` registers them).

The point-to-point measurement, or the ``--add-to`` file, is the base hardware file; each of
--fanout, --two-way, --joiner, --gloo and --interference then measures and adds its fields.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os

from ..analytic.two_way import check_table
from ..cpu_load import busy_line
from ..errors import ConfigError
from ..outputs import check_output_path
from ..progress import say
from ..units import parse_size_bytes
from .netbench_table import print_table, size_text


def add_netbench_parser(sub) -> None:
    from .netbench import add_measure_options

    p = sub.add_parser("netbench", help="measure bandwidth and latency between two hosts over TCP")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="server and client on loopback")
    where.add_argument("--host", help="a running 'python -m sgdsim.lab.netbench serve' server (one of --local, --host, --lab)")
    where.add_argument("--lab", action="store_true", help="between two hosts of the running lab")
    _host_cpu_arguments(p, where)
    p.add_argument("--port", type=int, default=5201, help="server port with --host")
    p.add_argument("--lab-server", type=int, default=0, metavar="I", help="lab host of the server")
    p.add_argument("--lab-client", type=int, default=1, metavar="I", help="lab host of the client")
    add_measure_options(p)
    p.add_argument("--fanout", type=int, default=0, metavar="N",
                   help="with --lab: also measure how N concurrent transfers share host 0's NIC "
                        "(hybrid sharing's FCFS weight, written to the hardware file)")
    p.add_argument("--fanout-size", default="8MB", help="bytes per transfer in the --fanout rounds")
    p.add_argument("--fanout-rounds", type=int, default=6, help="down+up rounds for --fanout")
    p.add_argument("--two-way", action="store_true",
                   help="with --lab: also measure the share a NIC direction keeps against flows "
                        "the other way, for every split of up to 8 flows (the hardware file's "
                        "two_way_table; needs >= 3 hosts, ~7 minutes per round on 9 hosts)")
    p.add_argument("--joiner", action="store_true",
                   help="with --lab: also measure how much of host 0's link a transfer that starts "
                        "late takes from one under way, pulls and pushes (the hardware file's "
                        "join_boost fields; ~4 minutes at 100 Mbit/s)")
    p.add_argument("--joiner-size", default="10MB", help="bytes per transfer in the --joiner rounds")
    p.add_argument("--joiner-rounds", type=int, default=6, metavar="N", help="--joiner rounds per offset")
    p.add_argument("--two-way-rounds", type=int, default=1, metavar="N",
                   help="--two-way: measure every case N times and keep the mean (default 1)")
    p.add_argument("--gloo", type=int, default=0, metavar="N",
                   help="with --lab: also time torch.distributed (gloo) send/recv and an "
                        "all-reduce over N ranks on hosts 1..N (needs torch)")
    p.add_argument("--interference", default=None, metavar="SIZE",
                   help="with --local or --lab: also measure the share of a worker's compute an "
                        "all-reduce of SIZE bytes (e.g. 4MB) occupies while it runs, on two gloo "
                        "ranks pinned to one core each (the hardware file's "
                        "allreduce_compute_share; needs torch; default: not measured)")
    p.add_argument("--add-to", default=None, metavar="HARDWARE.json",
                   help="skip the point-to-point measurement, start from this file (default: none) "
                        "and add what --fanout, --two-way, --gloo (these three with --lab) and "
                        "--interference measure (its other fields are kept); -o names the result "
                        "(this file again with --force)")
    p.add_argument("-o", "--output", default=None, metavar="HARDWARE.json",
                   help="write the sgdsim-hardware file (default: print only)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --output file")
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    p.set_defaults(lab_cmd=cmd_netbench)


def _host_cpu_arguments(p, where) -> None:
    where.add_argument("--host-cpu", action="store_true",
                       help="instead: this machine's CPU per byte of TCP over loopback and of a float32 "
                            "host reduction (the hardware file's tcp_cpu_s_per_byte, "
                            "reduce_cpu_s_per_byte; lab/hostcpu.py); with --add-to, added to that file")
    p.add_argument("--host-cpu-size", default="256MB", metavar="SIZE",
                   help="--host-cpu: bytes streamed over loopback (at least 200MB for a stable value; "
                        "the reduction's arrays are the smaller of this and 64MB) (default 256MB)")


def cmd_netbench(args) -> int:
    from ..cpu_load import CpuWatch
    from ..hardware import save_hardware
    from .netbench import measure_kwargs

    if args.output:
        check_output_path(args.output, args.force)  # before measuring, not after
    if args.host_cpu:
        return _host_cpu(args)
    kw = measure_kwargs(args)
    fanout_size, joiner_size, interference_bytes = _checked_sizes(args)
    watch = CpuWatch().start()
    m, hw = _base_hardware(args, kw)
    hw = _with_extras(hw, args, fanout_size, joiner_size, interference_bytes)
    hw = _with_load(hw, watch.cores())
    if args.format == "json":
        print(json.dumps(hw.to_dict(), indent=1))
    else:
        print_table(m, hw)
    if args.output:
        save_hardware(hw, args.output, force=args.force)
        say(f"wrote {args.output}")
    return 0


def _with_load(hw, cores: float | None):
    """Record other processes' CPU during the measurement in the file, and warn when the
    machine was busy (a busy sender or receiver moves fewer bytes than its link could)."""
    busy = busy_line(cores, "netbench measured")
    if busy:
        say(busy)
    if cores is None:
        return hw
    return dataclasses.replace(hw, measured={**hw.measured, "others_cpu_cores": round(cores, 3)})


def _host_cpu(args) -> int:
    """``--host-cpu``: measure, add to the --add-to file (or a nominal 10 Gbit/s one, whose
    network fields are not measured), print, write -o."""
    from ..hardware import Hardware, load_hardware, save_hardware
    from ..progress import status
    from .hostcpu import REDUCE_BYTES, measure_host_cpu, with_host_cpu

    size = int(parse_size_bytes(args.host_cpu_size))
    if size < 1:
        raise ConfigError(f"--host-cpu-size must be positive, got {args.host_cpu_size!r}")
    hw = load_hardware(args.add_to) if args.add_to else Hardware.nominal(10e9)
    with status("netbench: measuring the host's CPU per byte"):
        measured = measure_host_cpu(size, min(size, REDUCE_BYTES))
    hw = with_host_cpu(hw, measured)
    if args.format == "json":
        print(json.dumps(hw.to_dict(), indent=1))
    else:
        print(f"tcp_cpu_s_per_byte     {measured['tcp_cpu_s_per_byte']:.4g} s/B per end "
              f"({size_text(size)} over loopback)\n"
              f"reduce_cpu_s_per_byte  {measured['reduce_cpu_s_per_byte']:.4g} s/B (float32 a += b)")
    if not args.add_to:
        say("note: the file's network fields are nominal (10 Gbit/s), not measured: "
            "netbench --local/--host/--lab measures them")
    if args.output:
        save_hardware(hw, args.output, force=args.force)
        say(f"wrote {args.output}")
    return 0


def _checked_sizes(args) -> tuple[int, int, int]:
    """(fanout, joiner, interference) sizes in bytes; every bad option fails here, before
    anything is measured (in this order, which decides the error line of several)."""
    if (args.fanout or args.gloo or args.two_way or args.joiner) and not args.lab:
        raise ConfigError("--fanout, --two-way, --joiner and --gloo need --lab (they start "
                          "processes on lab hosts)")
    joiner_size = int(parse_size_bytes(args.joiner_size))
    if joiner_size < 1 or args.joiner_rounds < 1:
        raise ConfigError("--joiner-size and --joiner-rounds must be positive, got "
                          f"{args.joiner_size!r} and {args.joiner_rounds}")
    if args.fanout_rounds < 1:
        raise ConfigError(f"--fanout-rounds must be at least 1, got {args.fanout_rounds}")
    fanout_size = int(parse_size_bytes(args.fanout_size))
    if fanout_size < 1:
        raise ConfigError(f"--fanout-size must be positive, got {args.fanout_size!r}")
    if (args.gloo or args.interference) and importlib.util.find_spec("torch") is None:
        raise ConfigError("--gloo and --interference need torch: pip install torch (see the README)")
    interference_bytes = _interference_size(args.interference)
    if args.two_way_rounds < 1:
        raise ConfigError(f"--two-way-rounds must be at least 1, got {args.two_way_rounds}")
    if args.interference is not None and args.host:
        raise ConfigError("--interference runs its ranks on loopback (--local) or the lab (--lab)")
    if args.add_to and not (args.interference or (args.lab and (args.fanout or args.two_way or args.gloo
                                                                or args.joiner))):
        raise ConfigError("--add-to needs something to add: --interference, or --lab with --fanout, "
                          "--two-way, --joiner or --gloo")
    return fanout_size, joiner_size, interference_bytes


def _base_hardware(args, kw):
    """(point-to-point measurement or None, hardware): measured, or the --add-to file."""
    from ..hardware import load_hardware

    if args.add_to:
        m, hw = None, load_hardware(args.add_to)  # a bad file fails before measuring
    else:
        m = _point_to_point(args, kw)
    if m is not None:
        hw = m.hardware()
    if args.lab:  # every lab host is a namespace of this machine: they share its cores
        hw = dataclasses.replace(hw, host_cores=os.cpu_count() or 1)
    return m, hw


def _with_extras(hw, args, fanout_size: int, joiner_size: int, interference_bytes: int):
    if args.fanout:
        hw = _with_fairness(hw, args, fanout_size)
    if args.two_way:
        hw = _with_two_way(hw, args.two_way_rounds)
    if args.joiner:
        from .joiner import with_joiner
        hw = with_joiner(hw, joiner_size, args.joiner_rounds, say)
    if args.gloo:
        hw = _with_gloo(hw, args.gloo)
    if interference_bytes:
        hw = _with_interference(hw, interference_bytes, args.lab)
    return hw


def _point_to_point(args, kw):
    from ..progress import status
    from .netbench import measure, run_lab, run_local

    where = "loopback" if args.local else "lab" if args.lab else f"{args.host}:{args.port}"
    try:
        with status(f"netbench: measuring {where}"):
            if args.local:
                return run_local(**kw)
            if args.lab:
                return run_lab(args.lab_server, args.lab_client, **kw)
            return measure(args.host, args.port, **kw)
    except OSError as exc:  # the peer reset, refused or vanished
        raise ConfigError(f"netbench: connection to {where} failed: {exc.strerror or exc}") from None


def _with_fairness(hw, args, size: int):
    from .fairness import run_lab as fairness_lab

    say(f"fanout: {args.fanout} concurrent transfers of {args.fanout_size}, "
          f"{args.fanout_rounds} rounds each way ...")
    fair = fairness_lab(args.fanout, size, rounds=args.fanout_rounds)
    measured = dict(hw.measured, fanout=args.fanout, fanout_size_bytes=size,
                    fcfs_weight_down=fair["fcfs_weight_down"], fcfs_weight_up=fair["fcfs_weight_up"],
                    fanout_rounds=fair["rounds"])
    return dataclasses.replace(hw, fcfs_weight=fair["fcfs_weight"], share_cv=fair["share_cv"],
                               measured=measured)


def _with_two_way(hw, rounds: int):
    from .twoway import run_lab as two_way_lab

    tw = two_way_lab(progress=say, rounds=rounds)
    return dataclasses.replace(hw, two_way_penalty=tw["two_way_penalty"],
                               two_way_table=check_table(tw["two_way_table"]),
                               measured={**hw.measured, "two_way_cases": tw["two_way_cases"]})


def _with_gloo(hw, ranks: int):
    from .gloo_bench import ring_latency_lab, run_lab as gloo_lab

    say(f"gloo: send/recv and all-reduce over {ranks} ranks ...")
    g = gloo_lab(ranks)
    ring = ring_latency_lab(ranks, g["allreduce_bandwidth_bps"],
                            progress=say)
    measured = {**hw.measured, **{k: v for k, v in g.items() if k != "allreduce_bandwidth_bps"},
                "ring_latency_points": ring["ring_latency_points"]}
    return dataclasses.replace(hw, allreduce_bandwidth_bps=g["allreduce_bandwidth_bps"],
                               ring_latency_s=ring["ring_latency_s"], measured=measured)


def _interference_size(text: str | None) -> int:
    if text is None:
        return 0
    size = int(parse_size_bytes(text))
    if not 4 <= size <= 1 << 30:
        raise ConfigError(f"--interference must be a size from 4B to 1GiB, got {text!r}")
    return size


def _with_interference(hw, size: int, on_lab: bool):
    from .cluster import LabCluster
    from .interference import run
    from ..progress import status

    with status(f"interference: a compute loop alone and beside all-reduces of {size_text(size)} "
                f"({'lab hosts 1, 2' if on_lab else 'loopback'})"):
        r = run(size, lab=LabCluster.attach() if on_lab else None)
    share = r.pop("allreduce_compute_share")
    return dataclasses.replace(hw, allreduce_compute_share=share, measured={**hw.measured, **r})
