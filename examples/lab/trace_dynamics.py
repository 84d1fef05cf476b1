"""What traced two-worker runs say about TCP's dynamics in training, against the simulator's
(docs/validation/regimes/, finding 10).

    python examples/lab/trace_dynamics.py occupancy docs/validation/regimes/traced200-cnn-nooverlap-w2.json heldout200c 1
    python examples/lab/trace_dynamics.py joiners docs/validation/regimes/traced200-mlp-nooverlap-w2.json 0.42
    python examples/lab/trace_dynamics.py against docs/validation/regimes/traced200-wide-w2.json 1.463
    python examples/lab/trace_dynamics.py phases docs/validation/regimes/traced200-mlp-overlap-w2.json

- occupancy: how far each of worker 1's pulls sits from lock-step (folded phase, 0 lock-step,
  0.5 interleaved), as shares of the steps, in the lab's traced runs and in single simulated
  replications of the grid's case with its calibrated hardware file (8 seeds of STEPS steps;
  ``--set FIELD=VALUE`` replaces a hardware field, ``--lockstep-start`` starts both workers
  together as the lab does);
- joiners: the later transfer's share of the link while two transfers one way overlap, by how
  late it started (LONE_S: one transfer alone);
- against: the time, over LONE_S, of transfers that start together with the other worker's
  transfer the other way;
- phases: each run's distance from lock-step (folded phase), step by step;
- rounds: incumbent.py rounds with a transfer the other way starting with each round;
- alternation: two hosts' incumbent.py alternate logs (workers without compute);
- minimal: those logs' pair against the simulator's pair without compute;
- legs: near lock-step, how much each leg of a step (pull, compute, push) moves the pair's
  offset per second of offset, lab against simulator (``validate.regimes.leg_slopes``;
  TRACE may list several files of one configuration, comma-separated, to pool their runs);
- coupling: how much each leg of a worker slows per second that it overlaps the other
  worker's compute or transfers (``validate.coupling``; the lab's shared cores).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import numpy as np

import sgdsim
import sgdsim.replicate
from sgdsim.analytic.coarse_profile import CoarseProfile, to_profile
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.hardware import load_hardware
from sgdsim.units import parse_size_bytes
from sgdsim.validate.coupling import REGRESSORS, coupling
from sgdsim.validate.regimes import (LEGS, OCCUPANCY_EDGES, against_opposite, folded, joiner_shares,
                                     leg_slopes, phase_occupancy, phase_steps, pull_phases,
                                     two_worker_traces)
from incumbent import arrivals_of, progress_of
from sim_phases import pull_starts, timeline_steps, measured_case
from tcp_dynamics import field_value

OFFSET_BINS_S = (0.0, 0.05, 0.15, 0.3, float("inf"))


def traced_pairs(paths: str) -> list[dict]:
    """Each traced two-worker run's {rank: [(pull, push), ...]}, of one file or several
    comma-separated ones."""
    if "," in paths:
        return [t for path in paths.split(",") for t in traced_pairs(path)]
    path = paths
    with open(path, encoding="utf-8") as f:
        try:
            runs = json.load(f).get("runs", [])
        except (json.JSONDecodeError, AttributeError) as e:
            raise ConfigError(f"{path}: not a runs file of async_regimes.py ({e})") from None
    traced = two_worker_traces(runs)
    if not traced:
        raise ConfigError(f"{path}: no traced two-worker run (measure with async_regimes.py --trace)")
    return traced


def occupancy(args) -> str:
    lab = [phase_steps(*_pull_starts(t)) for t in traced_pairs(args.trace)]
    case, prof, runs, hw = _traced_case(args)
    sim, rates = _simulated(prof, hw, args.seeds, args.steps)
    return "\n".join([f"{case.name}, W = 2 (measured point {np.mean(runs[2]):.1f} examples/s; "
                      f"simulator {np.mean(rates):.1f} [{min(rates):.1f}, {max(rates):.1f}] over "
                      f"{args.seeds} seeds)", *_header(), *_rows("lab", lab), *_rows("simulator", sim)])


def legs(args) -> str:
    """Lab against simulator: each leg's slope on the offset near lock-step (± its standard
    error) and the per-step noise of the total, for offsets within ``--within`` of a step."""
    traces = traced_pairs(args.trace)
    case, prof, _, hw = _traced_case(args)
    within_s = args.within * float(np.median(np.diff(_pull_starts(traces[0])[0])))
    lab = [leg_slopes(t[0], t[1], within_s) for t in traces]
    sim = [leg_slopes(timeline_steps(p.timeline, 0), timeline_steps(p.timeline, 1), within_s)
           for p in _predictions(prof, hw, args.seeds, args.steps)]
    return "\n".join([f"{case.name}: offsets within {args.within:g} of a step ({within_s:.2f} s)",
                      f"| | pairs | {' | '.join(LEGS)} | noise of total (s) |",
                      f"|---|---:|{'---:|' * (len(LEGS) + 1)}", _legs_row("lab", lab), _legs_row("simulator", sim)])


def coupling_table(args) -> str:
    fit = coupling(traced_pairs(args.trace))
    lines = ["| leg | steps | alone (s) | slower per second of overlap with | and with |",
             "|---|---:|---:|---|---|"]
    for leg, (what_a, what_b) in REGRESSORS.items():
        coef, se, n = fit[leg]
        lines.append(f"| {leg} | {n} | {coef[0]:.3f} | {what_a}: {100 * coef[1]:+.1f} ± {100 * se[1]:.1f} % "
                     f"| {what_b}: {100 * coef[2]:+.1f} ± {100 * se[2]:.1f} % |")
    return "\n".join(lines)


def _legs_row(label: str, fits: list[dict]) -> str:
    """One row: the fits of several runs pooled by inverse variance (runs differ in length)."""
    cells = []
    for leg in LEGS:
        ok = [f[leg] for f in fits if np.isfinite(f[leg][1]) and f[leg][1] > 0]
        w = np.array([1 / se ** 2 for _, se, _, _ in ok])
        slope = float(np.dot(w, [s for s, _, _, _ in ok]) / w.sum()) if ok else float("nan")
        cells.append(f"{slope:+.2f} ± {1 / np.sqrt(w.sum()):.2f}" if ok else "-")
    noise = [f["total"][2] for f in fits if np.isfinite(f["total"][2])]
    pairs = sum(f["total"][3] for f in fits)
    return f"| {label} | {pairs} | " + " | ".join(cells) + (f" | {np.mean(noise):.3f} |" if noise else " | - |")


def _traced_case(args):
    """The grid's case of a traced configuration, its hardware file with ``--set`` applied."""
    case, prof, runs, hw = measured_case(args.grid, args.case)
    if (case.arch, case.mode) != ("ps", "async"):
        raise ConfigError(f"case {case.name!r} is {case.mode} {case.arch}; traces are of async PS")
    for field, value in (s.split("=", 1) for s in args.set):
        if field not in {f.name for f in dataclasses.fields(hw)}:
            raise ConfigError(f"--set {field}: not a field of a hardware file")
        hw = dataclasses.replace(hw, **{field: field_value(value)})
    if args.lockstep_start:  # replication 0's start, as the lab's workers start: together
        sgdsim.replicate.start_points = lambda seed, dims, idx: [(0.0,) * dims for _ in idx]
    return case, prof, runs, hw


def _pull_starts(trace: dict) -> tuple[list, list]:
    """Workers 0's and 1's pull start times in one traced run."""
    return [s[0][0] for s in trace[0]], [s[0][0] for s in trace[1]]


def _predictions(prof, hw, seeds: int, steps: int):
    """Single replications of two workers with their timelines, one per seed."""
    for seed in range(seeds):
        yield sgdsim.predict(prof, workers=[2], replications=1, steps=steps, seed=seed,
                             timeline=True, **hw.predict_kwargs("ps", "async"))[0]


def _simulated(prof, hw, seeds: int, steps: int) -> tuple[list, list]:
    """``phase_steps`` and throughputs of ``_predictions``."""
    placed, rates = [], []
    for p in _predictions(prof, hw, seeds, steps):
        rates.append(p.throughput)
        placed.append(phase_steps(pull_starts(p.timeline, 0), pull_starts(p.timeline, 1)))
    return placed, rates


def _header() -> list[str]:
    bins = " | ".join(f"{a:g}-{b:g}" for a, b in zip(OCCUPANCY_EDGES, OCCUPANCY_EDGES[1:]))
    return [f"| distance from lock-step (steps) | {bins} |", f"|---|{'---:|' * (len(OCCUPANCY_EDGES) - 1)}"]


def _occupancy_row(label: str, phases) -> str:
    return f"| {label} | " + " | ".join(f"{x:.2f}" for x in phase_occupancy(phases)) + " |"


def _rows(label: str, placed) -> list[str]:
    """Share of the steps per bin, and the median step (s) there."""
    phase = folded(np.concatenate([p for p, _ in placed]))
    step_s = np.concatenate([s for _, s in placed])
    which = np.digitize(phase, OCCUPANCY_EDGES[1:-1])
    medians = [f"{np.median(step_s[which == k]):.2f}" if (which == k).any() else "-"
               for k in range(len(OCCUPANCY_EDGES) - 1)]
    return [_occupancy_row(f"{label}: share of {len(phase)} steps", phase),
            f"| {label}: median step (s) | " + " | ".join(medians) + " |"]


def joiners(args) -> str:
    lines = ["| direction | late by (s) | pairs | late share, median | mean |", "|---|---|---:|---:|---:|"]
    traced = traced_pairs(args.trace)
    for name, i in (("pull", 0), ("push", 1)):
        got = np.array([x for t in traced
                        for x in joiner_shares([s[i] for s in t[0]], [s[i] for s in t[1]], args.lone_s)])
        for lo, hi in zip(OFFSET_BINS_S, OFFSET_BINS_S[1:]):
            m = (got[:, 0] >= lo) & (got[:, 0] < hi) if len(got) else np.zeros(0, bool)
            if m.sum():
                lines.append(f"| {name} | {lo:g}-{hi:g} | {m.sum()} | {np.median(got[m, 1]):.2f} | "
                             f"{got[m, 1].mean():.2f} |")
    return "\n".join(lines)


def against(args) -> str:
    lines = ["| direction | transfers | time / lone: 10 % | median | 90 % | max | over 1.2 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    traced = traced_pairs(args.trace)
    for name, i in (("pull", 0), ("push", 1)):
        times = [x for t in traced for w in (0, 1)
                 for x in against_opposite([s[i] for s in t[w]], [s[1 - i] for s in t[1 - w]],
                                           [s[i] for s in t[1 - w]], args.lone_s)]
        if times:
            q = np.percentile(times, [10, 50, 90])
            lines.append(f"| {name} | {len(times)} | {q[0]:.2f} | {q[1]:.2f} | {q[2]:.2f} | "
                         f"{max(times):.2f} | {sum(x > 1.2 for x in times)} |")
    return "\n".join(lines)


def phases(args) -> str:
    lines = []
    for k, t in enumerate(traced_pairs(args.trace)):
        p = folded(pull_phases(*_pull_starts(t)))
        lines.append(f"run {k}: " + " ".join(f"{x:.2f}" for x in p))
    return "\n".join(lines)


def rounds(args) -> str:
    """incumbent.py rounds with arrivals the other way: each round's incumbent time and its
    arrival's, over LONE_S, where the arrival starts within 0.3 s of the round."""
    if len(args.files) % 2:
        raise ConfigError("give incumbent.txt arrivals.txt pairs, one per run")
    lines = []
    for inc, arr in zip(args.files[::2], args.files[1::2]):
        ends = [(s, rec[-1, 0]) for s, rec in progress_of(inc) if len(rec)]
        pairs = [((e - s) / args.lone_s, (b - a) / args.lone_s, a - s) for s, e in ends
                 for i, a, b in arrivals_of(arr) if i >= 0 and abs(a - s) < 0.3]
        if not pairs:
            raise ConfigError(f"{inc}: no round has an arrival within 0.3 s of its start")
        mine, theirs, lag = (np.array(x) for x in zip(*pairs))
        lines.append(f"{inc}: {len(mine)} rounds, the arrival {np.median(lag) * 1e3:.0f} ms after "
                     f"(median); incumbent / lone: median {np.median(mine):.2f}, max {mine.max():.2f}, "
                     f"over 1.2 in {int((mine > 1.2).sum())}; arrival / lone: median "
                     f"{np.median(theirs):.2f}, max {theirs.max():.2f}")
    return "\n".join(lines)


def alternation(args) -> str:
    """Two hosts' incumbent.py alternate logs: the transfers that start with one of the other
    host's the other way, and at the middle of each of host A's transfers whether host B moves
    bytes the other way (x: interleaved), the same way (=: lock-step) or none (.)."""
    a, b = (_alternated(path) for path in (args.a, args.b))
    lines = []
    for kind, other in (("pull", "push"), ("push", "pull")):
        got = np.array(against_opposite(a[kind], b[other], b[kind], args.lone_s)
                       + against_opposite(b[kind], a[other], a[kind], args.lone_s))
        if len(got):
            plural = "pulls" if kind == "pull" else "pushes"
            lines.append(f"{plural} starting with a transfer the other way: {len(got)}, time / lone "
                         f"median {np.median(got):.2f}, 90 % {np.percentile(got, 90):.2f}, max "
                         f"{got.max():.2f}, over 1.2 in {int((got > 1.2).sum())}")
    state = []
    for kind, s, e in sorted((k, *t) for k in a for t in a[k]):
        mid = (s + e) / 2
        same = any(x < mid < y for x, y in b[kind])
        state.append("=" if same else "x" if any(x < mid < y for k in b for x, y in b[k]) else ".")
    phase = pull_phases([t[0] for t in a["pull"]], [t[0] for t in b["pull"]])
    lines += ["A's transfers in turn: " + "".join(
        c for _, c in sorted(zip([t[1] for k in a for t in a[k]], state))),
        "B's pulls in A's steps (0.5: interleaved): " + " ".join(f"{x:.2f}" for x in phase)]
    coef, se, _ = coupling([{0: list(zip(a["pull"], a["push"])), 1: list(zip(b["pull"], b["push"]))}])["compute"]
    pauses = [q[0] - p[1] for p, q in zip(a["pull"], a["push"])]
    if np.isfinite(coef).all() and min(pauses) > 0:  # a pause between pull and push (alternate ... PAUSE)
        lines.append(f"pause {coef[0]:.3f} s alone, slower per second the other pulls {100 * coef[1]:+.1f} ± "
                     f"{100 * se[1]:.1f} %, pushes {100 * coef[2]:+.1f} ± {100 * se[2]:.1f} %")
    return "\n".join(lines)


def minimal(args) -> str:
    """The lab's pair without compute (two alternate logs) against the simulator's: two
    workers of a coarse profile (the logs' transfer size, 1 ms of compute) on HARDWARE."""
    a, b = (_alternated(path) for path in (args.a, args.b))
    lab = pull_phases([s for s, _ in a["pull"]], [s for s, _ in b["pull"]])
    prof = to_profile(CoarseProfile(args.size_bytes, 0.5e-3, 0.5e-3, 0.0, 1))
    sim, _ = _simulated(prof, load_hardware(args.hardware), args.seeds, args.steps)
    return "\n".join([*_header(), _occupancy_row(f"lab ({len(lab)} pulls)", lab),
                      *(_occupancy_row(f"simulator, seed {k}", ph) for k, (ph, _) in enumerate(sim))])


def _alternated(path) -> dict:
    rows = [ln.split() for ln in open(path, encoding="utf-8") if ln.strip()]
    if not rows or any(len(r) != 3 or r[0] not in ("pull", "push") for r in rows):
        raise ConfigError(f"{path}: not a log of incumbent.py alternate")
    return {k: [(float(x), float(y)) for kind, x, y in rows if kind == k] for k in ("pull", "push")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    compared = {}
    for name, steps in (("occupancy", 40), ("legs", 60)):
        o = compared[name] = sub.add_parser(name)
        o.add_argument("trace")
        o.add_argument("grid", help="name G of examples/grids/lab-G.toml with docs/validation/G/")
        o.add_argument("case", type=int, help="the traced configuration's index in the grid")
        o.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
        o.add_argument("--seeds", type=int, default=8)
        o.add_argument("--steps", type=int, default=steps)
        o.add_argument("--lockstep-start", action="store_true")
    compared["legs"].add_argument("--within", type=float, default=0.15,
                                  help="offsets within this share of a step")
    for name in ("joiners", "against"):
        p = sub.add_parser(name)
        p.add_argument("trace")
        p.add_argument("lone_s", type=float, help="one transfer alone (s)")
    sub.add_parser("phases").add_argument("trace")
    sub.add_parser("coupling").add_argument("trace", help="traced runs (several: comma-separated)")
    r = sub.add_parser("rounds")
    r.add_argument("lone_s", type=float, help="one transfer alone (s)")
    r.add_argument("files", nargs="+", metavar="INC ARR")
    al = sub.add_parser("alternation")
    al.add_argument("lone_s", type=float, help="one transfer alone (s)")
    al.add_argument("a")
    al.add_argument("b")
    mi = sub.add_parser("minimal")
    mi.add_argument("a", help="incumbent.py alternate log of the host that starts with a pull")
    mi.add_argument("b", help="... and of the one that starts with a push")
    mi.add_argument("hardware")
    mi.add_argument("--size", default="10MB", help="bytes per transfer (default 10MB)")
    mi.add_argument("--seeds", type=int, default=6)
    mi.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    if getattr(args, "lone_s", 1.0) <= 0:
        ap.error(f"LONE_S must be positive, got {args.lone_s}")
    if not 0 < getattr(args, "within", 0.1) <= 0.5:
        ap.error(f"--within must be a share of a step in (0, 0.5], got {args.within}")
    if args.cmd == "minimal":
        try:
            args.size_bytes = parse_size_bytes(args.size)
        except ConfigError as e:
            ap.error(str(e))
    try:
        print({"occupancy": occupancy, "joiners": joiners, "against": against, "phases": phases,
               "rounds": rounds, "alternation": alternation, "minimal": minimal, "legs": legs, "coupling": coupling_table}[args.cmd](args))
    except (ConfigError, ProfileError, OSError, KeyError, ValueError) as e:
        print(f"trace_dynamics.py: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
