"""``sgdsim netbench`` and ``sgdsim lab``: argument parsers and command functions.

Contract: ``register(subparsers)`` adds the two commands to an ``add_subparsers(...)`` object
(nested sub-commands reuse the parser class of the parent, so one-line argparse errors stay
one line) and returns ``{"netbench": cmd_netbench, "lab": cmd_lab}``; each ``cmd_*(args)``
returns an exit code and raises ``SgdsimError`` for user errors, which the caller prints as
one line (exit 2). Every parser also gets ``set_defaults(lab_cmd=...)`` for callers that
dispatch on the namespace instead.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys

from ..analytic.two_way import check_table
from ..errors import ConfigError
from ..outputs import check_output_path
from ..units import format_bps, parse_size_bytes
from ..progress import say


def register(subparsers) -> dict:
    _netbench_parser(subparsers)
    _lab_parser(subparsers)
    return {"netbench": cmd_netbench, "lab": cmd_lab}


def _netbench_parser(sub) -> None:
    from .netbench import add_measure_options

    p = sub.add_parser("netbench", help="measure bandwidth and latency between two hosts over TCP")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true", help="server and client on loopback")
    where.add_argument("--host", help="a running 'python -m sgdsim.lab.netbench serve' server (one of --local, --host, --lab)")
    where.add_argument("--lab", action="store_true", help="between two hosts of the running lab")
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


# ----------------------------------------------------------------------------- netbench

def cmd_netbench(args) -> int:
    from ..hardware import load_hardware, save_hardware
    from .netbench import measure_kwargs

    if args.output:
        check_output_path(args.output, args.force)  # before measuring, not after
    kw = measure_kwargs(args)
    if (args.fanout or args.gloo or args.two_way or args.joiner) and not args.lab:
        raise ConfigError("--fanout, --two-way, --joiner and --gloo need --lab (they start "
                          "processes on lab hosts)")
    joiner_size = int(parse_size_bytes(args.joiner_size))
    if joiner_size < 1 or args.joiner_rounds < 1:
        raise ConfigError("--joiner-size and --joiner-rounds must be positive, got "
                          f"{args.joiner_size!r} and {args.joiner_rounds}")
    if args.fanout_rounds < 1:
        raise ConfigError(f"--fanout-rounds must be at least 1, got {args.fanout_rounds}")
    fanout_size = int(parse_size_bytes(args.fanout_size))  # bad options fail before measuring
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
    if args.add_to:
        m, hw = None, load_hardware(args.add_to)  # a bad file fails before measuring
    else:
        m = _point_to_point(args, kw)
    if m is not None:
        hw = m.hardware()
    if args.lab:  # every lab host is a namespace of this machine: they share its cores
        hw = dataclasses.replace(hw, host_cores=os.cpu_count() or 1)
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
    if args.format == "json":
        print(json.dumps(hw.to_dict(), indent=1))
    else:
        _print_table(m, hw)
    if args.output:
        save_hardware(hw, args.output, force=args.force)
        say(f"wrote {args.output}")
    return 0


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

    with status(f"interference: a compute loop alone and beside all-reduces of {_size(size)} "
                f"({'lab hosts 1, 2' if on_lab else 'loopback'})"):
        r = run(size, lab=LabCluster.attach() if on_lab else None)
    share = r.pop("allreduce_compute_share")
    return dataclasses.replace(hw, allreduce_compute_share=share, measured={**hw.measured, **r})


def _print_table(m, hw) -> None:
    if m is not None:
        _print_point_to_point(m, hw)
    _print_extras(hw)


def _print_point_to_point(m, hw) -> None:
    print(f"{'size':>12}  {'median':>11}  {'repeats':>7}  {'rate':>12}  {'fit':>11}")
    fit = m.fit()
    for size, t, reps in zip(m.sizes_bytes, m.median_s, m.repeats):
        model = hw.overhead_alpha_s_per_byte * size + hw.overhead_beta_s
        print(f"{_size(size):>12}  {t * 1e3:9.3f}ms  {reps:7d}  {format_bps(8 * size / t):>12}  "
              f"{model * 1e3:9.3f}ms")
    if m.skipped_bytes:
        print(f"skipped (budget): {', '.join(_size(s) for s in m.skipped_bytes)}")
    print(f"bandwidth {format_bps(hw.bandwidth_bps)} (1/alpha), alpha {hw.overhead_alpha_s_per_byte:.4g} "
          f"s/B, beta {hw.overhead_beta_s * 1e6:.1f} us, latency {hw.latency_s * 1e6:.1f} us "
          f"(RTT/2); {m.elapsed_s:.1f} s")
    print(f"fit of time = alpha·size + beta: R² {fit.r_squared:.4f}; the worst size is "
          f"{fit.max_rel_residual:.0%} off the line (small messages, where latency and scheduling "
          f"noise dominate, miss it most; bandwidth comes from the large ones)")
    if fit.beta_s < 0:
        print(f"the fit's intercept beta was {fit.beta_s * 1e6:.1f} us: a per-message cost below "
              "what the line resolves, stored as 0")


def _print_extras(hw) -> None:
    """The fields, and the raw figures behind them where ``measured`` has them (it is
    free-form: a file written by hand, or an older sgdsim, may lack any of them)."""
    g = hw.measured
    if hw.allreduce_bandwidth_bps is not None:
        raw = (f"send/recv {format_bps(g['gloo_p2p_bandwidth_bps'])}; " if "gloo_p2p_bandwidth_bps" in g
               else "")
        ranks = f" over {g['gloo_ranks']} ranks" if "gloo_ranks" in g else ""
        print(f"gloo: {raw}ring all-reduce{ranks} behaves like "
              f"Eq. 11 at {format_bps(hw.allreduce_bandwidth_bps)}"
              + (f" ({_beta_text(g['allreduce_beta_s'])})" if "allreduce_beta_s" in g else "")
              + (f"; {hw.ring_latency_s * 1e3:.2f} ms per ring step"
                 if hw.ring_latency_s is not None else ""))
    if hw.fcfs_weight is not None:
        rounds = (f"; downlink rounds {g['fcfs_weight_down']:.3f}, uplink rounds "
                  f"{g['fcfs_weight_up']:.3f}" if {"fcfs_weight_down", "fcfs_weight_up"} <= g.keys()
                  else "")
        n = f"{g['fanout']} " if "fanout" in g else ""
        print(f"sharing: {n}concurrent transfers finish like "
              f"{1 - hw.fcfs_weight:.0%} PS + {hw.fcfs_weight:.0%} FCFS (fcfs_weight "
              f"{hw.fcfs_weight:.3f}{rounds})")
    if hw.two_way_penalty is not None:
        print(f"two-way traffic: a NIC direction loses {hw.two_way_penalty:.0%} of its capacity "
              f"per surplus flow the other way (--two-way-penalty {hw.two_way_penalty:.3f})")
    if hw.two_way_table is not None:
        t = hw.two_way_table
        print(f"two-way table ({len(t[0]) - 1} flows): 1 against 3 keeps {t[0][1][3]:.2f} out, "
              f"{t[1][1][3]:.2f} in; 4 against 4 keeps {t[0][4][4]:.2f} out, {t[1][4][4]:.2f} in"
              if len(t[0]) > 4 else f"two-way table ({len(t[0]) - 1} flows) measured")
    if hw.allreduce_compute_share is not None:
        size = g.get("interference_size_bytes")
        rounds = ", ".join(f"{s:.0%}" for s in g.get("interference_shares", []))
        print(f"interference: an all-reduce{f' of {_size(size)}' if size else ''} occupies "
              f"{hw.allreduce_compute_share:.0%} of a worker's compute while it runs "
              f"({f'rounds: {rounds}; ' if rounds else ''}--allreduce-compute-share)")
    if hw.share_cv is not None:
        print(f"unequal shares: the first of them ends early, as with per-flow weights of CV "
              f"{hw.share_cv:.2f} (--share-cv)")
    if hw.join_boost is not None:
        push = (f"pushes {hw.join_boost_push:.2f} from {(hw.join_after_push_s or 0) * 1e3:.0f} ms"
                if hw.join_boost_push is not None else "pushes equal")
        print(f"late-comer: a transfer that joins one under way gets {hw.join_boost:.2f}× its weight "
              f"from {(hw.join_after_s or 0) * 1e3:.0f} ms on pulls, {push} (--join-boost, --join-after)")
        if hw.join_delay_s is not None:
            print(f"  after the joiner's onset: {hw.join_delay_s * 1e3:.0f} ms on pulls, "
                  f"{(hw.join_delay_push_s or 0) * 1e3:.0f} ms on pushes (--join-delay; applied by default)")


def _beta_text(beta_s: float) -> str:
    if beta_s >= 0:
        return f"beta {beta_s * 1e3:.2f} ms"
    return (f"the fit's intercept beta {beta_s * 1e3:.2f} ms is below what it resolves: "
            "no fixed cost per call is visible")


def _size(n: int) -> str:
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return f"{n}B"


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
