"""Measure run-to-run spread and regimes of real async PS training in the lab (root).

    sudo .venv/bin/python examples/lab/async_regimes.py -o docs/validation/regimes/runs.json
    .venv/bin/python examples/lab/async_regimes.py --report docs/validation/regimes/runs.json
    .venv/bin/python examples/lab/async_regimes.py --transfers docs/validation/regimes/traced-w2.json

Every (overlap, workers) configuration is run ``--repeats`` times; each run keeps every
worker's step completion times, so ``sgdsim.validate.regimes`` can show how long a regime
(lock-step convoy or interleaving) lasts. Results are appended to the output file as they
come, so an interrupted measurement keeps its runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from sgdsim.errors import ConfigError
from sgdsim.units import parse_bandwidth_bps
from sgdsim.validate.regimes import dwell_times_s, windows

WINDOW_S = 10.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out")
    ap.add_argument("--report", metavar="RUNS.json", help="print the Markdown summary of a measurement")
    ap.add_argument("--compare", metavar="RUNS.json",
                    help="predict every measured configuration (standalone lab profiles, --hardware) "
                         "and print measured against predicted")
    ap.add_argument("--hardware", default="examples/grids/hardware-lab-100mbps.json")
    ap.add_argument("--model", default="lab:mlp-10mb")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--bandwidth", default="100Mbps")
    ap.add_argument("--workers", default="2,4,8")
    ap.add_argument("--overlap", default="no,yes")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--trace", action="store_true", help="keep per-tensor transfer times")
    ap.add_argument("--ps-count", type=int, default=1, help="parameter servers sharing the layers")
    ap.add_argument("--stagger", default="0", help="worker r starts r times this later (e.g. 0.6s)")
    ap.add_argument("--trainer", default="lab", choices=("lab", "torch"),
                    help="the project's trainer, or the held-out torch.distributed.rpc one (no overlap, no trace)")
    ap.add_argument("--transfers", metavar="RUNS.json",
                    help="of traced 2-worker runs: each worker's pulls and pushes, step by step")
    ap.add_argument("--spread", metavar="RUNS.json",
                    help="of traced 2-worker runs: the share spread of pulls (pushes) that start together")
    args = ap.parse_args()
    if args.spread:
        with open(args.spread, encoding="utf-8") as f:
            print(spread(json.load(f)["runs"]))
        return
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            print(report(json.load(f)["runs"]))
        return
    if args.transfers:
        with open(args.transfers, encoding="utf-8") as f:
            print(transfers(json.load(f)["runs"]))
        return
    if args.compare:
        with open(args.compare, encoding="utf-8") as f:
            print(compare(json.load(f)["runs"], args.hardware))
        return
    if not args.out:
        sys.exit("error: give -o RUNS.json (measure) or --report RUNS.json")
    if os.path.exists(args.out):
        sys.exit(f"error: {args.out} exists; choose another file")
    from sgdsim.lab.train.runner import check_stagger
    try:  # before the lab comes up
        check_stagger(args.stagger, "ps", "async")
    except ConfigError as e:
        print(f"error: --stagger: {e}", file=sys.stderr)
        sys.exit(2)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    counts = [int(w) for w in args.workers.split(",")]
    bw = parse_bandwidth_bps(args.bandwidth)
    from sgdsim.lab.cluster import LabCluster
    from sgdsim.lab.train import run_training
    from sgdsim.lab.train.runner import lab_hosts

    runs = []
    with LabCluster(lab_hosts(max(counts), "ps", args.ps_count), bw) as lab:
        for overlap in [o == "yes" for o in args.overlap.split(",")]:
            for W in counts:
                for rep in range(args.repeats):
                    r = run_training(args.model, W, args.batch_size, bw, "ps", "async", overlap,
                                     args.duration, args.warmup, lab=lab, trace=args.trace,
                                     ps_count=args.ps_count, stagger_s=args.stagger,
                                     trainer=args.trainer)
                    runs.append({"repeat": rep, **r.to_dict(with_times=True)})
                    print(f"overlap={overlap} W={W} rep={rep}: {r.throughput_intervals:.2f} ex/s",
                          flush=True)
                    with open(args.out, "w", encoding="utf-8") as f:
                        json.dump({"format": "sgdsim-lab-regimes", "runs": runs}, f)


def report(runs: list[dict]) -> str:
    """Per configuration: each run's throughput, the spread, and how long regimes last."""
    lines = ["| overlap | W | runs (examples/s) | mean | (max − min) / mean | time in lock-step | "
             "lock-step lasts | interleaving lasts |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    detail = []
    for key in sorted({(r["overlap"], r["workers"]) for r in runs}):
        group = [r for r in runs if (r["overlap"], r["workers"]) == key]
        xs = np.array([r["throughput_intervals"] for r in group])
        ws = [windows(r["step_times_s"], r["batch_size"], r["duration_s"] - r["window_s"],
                      r["duration_s"], WINDOW_S) for r in group]
        dw = [dwell_times_s(w, WINDOW_S) for w in ws]
        lines.append(
            f"| {'yes' if key[0] else 'no'} | {key[1]} | {', '.join(f'{x:.1f}' for x in xs)} | "
            f"{xs.mean():.1f} | {(xs.max() - xs.min()) / xs.mean():.0%} | "
            f"{np.mean([d['lockstep_share'] for d in dw]):.0%} | "
            f"{np.mean([d['lockstep_s'] for d in dw]):.0f} s | "
            f"{np.mean([d['interleaved_s'] for d in dw]):.0f} s |")
        for r, w in zip(group, ws):
            detail.append(f"- overlap {'yes' if key[0] else 'no'}, W={key[1]}, run {r['repeat']}: "
                          + " ".join(f"{s.throughput:.0f}/{s.lockstep:.2f}" for s in w))
    return "\n".join(lines + ["", f"Per {WINDOW_S:g}-s window: throughput / lock-step index "
                                   "(0: workers finish together, 1: evenly interleaved)", ""] + detail)


def compare(runs: list[dict], hardware: str) -> str:
    """Measured runs against the simulator's default (the hardware file's two-way table, its join
    boosts with their onset and the share spread, where measured) and with equal shares."""
    import sgdsim
    from sgdsim.hardware import load_hardware
    from sgdsim.lab.train import profile_lab_model

    hw = load_hardware(hardware)
    lines = ["| overlap | W | measured runs | mean | default | error | interval holds runs | "
             "equal shares | error | interval holds runs |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    profiles = {}
    for key in sorted({(r["overlap"], r["workers"]) for r in runs}):
        group = [r for r in runs if (r["overlap"], r["workers"]) == key]
        r0 = group[0]
        if key[0] not in profiles:
            profiles[key[0]] = profile_lab_model(r0["model"], r0["batch_size"], key[0])
        xs = np.array([r["throughput_intervals"] for r in group])
        got = [sgdsim.predict(profiles[key[0]], workers=key[1],
                              **hw.predict_kwargs("ps", "async", tcp_dynamics=on))[0] for on in (None, False)]
        cells = [f"{_fmt(p)} | {_err(p, xs)} | {sum(p.ci_low <= x <= p.ci_high for x in xs)}/{len(xs)}"
                 for p in got]
        lines.append(f"| {'yes' if key[0] else 'no'} | {key[1]} | {', '.join(f'{x:.1f}' for x in xs)} | "
                     f"{xs.mean():.1f} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def transfers(runs: list[dict]) -> str:
    """Per traced 2-worker run: where worker 1's pulls start within worker 0's step (0: with
    it, lock-step; 0.5: half a step later) and every step's pull and push, seconds from the
    first (validate.regimes.transfer_stats has the same definition of a transfer)."""
    from sgdsim.validate.regimes import pull_phases, step_transfers

    lines = []
    for r in runs:
        steps = step_transfers(r["events"])
        a, b = (np.array(sorted(pull + push for pull, push in steps.get(k, []))) for k in (0, 1))
        phase = pull_phases(a[:, 0], b[:, 0])
        lines += [f"run {r['repeat']}: {r['throughput_intervals']:.2f} examples/s; phase of worker 1's "
                  f"pulls in tenths of worker 0's step: {np.histogram(phase, 10, (0, 1))[0].tolist()}",
                  "| step | w0 pull | w0 push | w1 pull | w1 push |", "|---:|---|---|---|---|"]
        t0 = min(a[0, 0], b[0, 0])
        for k in range(min(len(a), len(b))):
            cells = [f"{x - t0:.2f}–{y - t0:.2f}" for x, y in ((a[k, 0], a[k, 1]), (a[k, 2], a[k, 3]),
                                                           (b[k, 0], b[k, 1]), (b[k, 2], b[k, 3]))]
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread(runs: list[dict]) -> str:
    """The CV of TCP shares (``lab.fairness.share_cv``, as ``netbench --fanout`` fits it) from
    the traced runs' pulls, and pushes, that the two workers start together."""
    from sgdsim.lab.fairness import share_cv
    from sgdsim.validate.regimes import together, two_worker_traces

    traced = two_worker_traces(runs)
    lines = []
    for kind, name in ((0, "pulls"), (1, "pushes")):
        rounds = []
        for steps in traced:
            a, b = ([t[kind] for t in steps.get(w, [])] for w in (0, 1))
            rounds += [{"completions_s": c} for c in together(a, b)]
        if not rounds:
            lines.append(f"{name}: no pairs started together")
            continue
        ratio = np.mean([min(c["completions_s"]) / max(c["completions_s"]) for c in rounds])
        lines.append(f"{name}: {len(rounds)} pairs started together, first/last end {ratio:.3f}, "
                     f"share_cv {share_cv(rounds):.3f}")
    return "\n".join(lines)


def _err(p, xs) -> str:
    return f"{100 * (p.throughput / xs.mean() - 1):+.1f} %"


def _fmt(p) -> str:
    modes = " (bimodal)" if p.regimes else ""
    return f"{p.throughput:.1f} [{p.ci_low:.1f}, {p.ci_high:.1f}]{modes}"


if __name__ == "__main__":
    main()
