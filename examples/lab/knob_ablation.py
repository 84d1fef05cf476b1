"""What each knob of a hardware file gains, on the runs it was fitted on and on runs it never saw.

The lab's hardware files (``netbench --lab`` and its extras) carry knobs measured or fitted on
the project's own trainer: the two-way table, the late-comer's boost and onset, the stalls,
the hybrid FCFS weight, the host's cores and contention, gloo's ring-step latency and compute
share. Each is switched off in turn (the paper's default in its place) and every grid is
replayed from its committed runs (``validate --measured``); a knob stays only where it lowers
the error on runs it was not fitted on. Prints, per knob and per grid group, the fine model's
mean |error|, signed mean and max, and the interval's coverage; writes the table as markdown
with ``--markdown FILE``.

    python examples/lab/knob_ablation.py --markdown docs/validation/torch/knobs.md   # ~3 min
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile

from sgdsim.validate.cli import replay
from sgdsim.validate.grid import load_grid

FITTED = ("async", "cnn", "allreduce", "2ps", "widecnn")  # the lab's own trainer: fitted on
HELD_OUT = ("torch",)  # the held-out trainer family's first grid (the table of 2026-11-27)
# every grid of the held-out family: nothing is fitted on any of them
HELD_OUT_ALL = HELD_OUT + ("torch-b", "torch-c", "torch-d", "torch-e", "torch-f", "torch-g")
SATURATED = 3  # from this many async workers on, the lab's links are near saturation

NONE = {}
SHAPED = {"two_way_busy_shape": None, "two_way_busy_shaped": None, "two_way_busy_shaped_push": None}
KNOBS = {
    "all knobs (today)": NONE,
    "no two-way table/penalty": {"two_way_table": None, "two_way_penalty": None, "two_way_busy": None,
                                 "two_way_busy_push": None, "two_way_joined": None,
                                 "two_way_joined_after_s": None, "two_way_joined_push": None,
                                 "two_way_joined_after_push_s": None, "two_way_joined_draws": None,
                                 "two_way_joined_draws_push": None, **SHAPED},
    "flat busy shares (no shape)": SHAPED,
    "no late-comer boost": {"join_boost": None, "join_boost_push": None, "join_after_s": None,
                            "join_after_push_s": None, "join_delay_s": None, "join_delay_push_s": None},
    "no share spread": {"share_cv": None},
    "no FCFS weight (0.5)": {"fcfs_weight": None},
    "no host contention": {"host_cores": None, "host_contention": None, "host_contention_push": None},
    "no ring latency": {"ring_latency_s": None},
    "no all-reduce compute share": {"allreduce_compute_share": None},
    "no β": {"overhead_beta_s": 0.0},
}
_ALL_OFF = {k: v for knob in KNOBS.values() for k, v in knob.items()}
KNOBS["every knob off"] = _ALL_OFF
NOMINAL = "no hardware file, no calibration (the nominal link rate)"
KNOBS[NOMINAL] = None  # a user who gives only --bandwidth


def without(grid, changes: dict):
    """The grid with every case's hardware file stripped of ``changes``' fields."""
    if changes is None:
        return dataclasses.replace(grid, cases=tuple(
            dataclasses.replace(c, hardware_spec=None, hardware=None, calibrate=False, pilot=None)
            for c in grid.cases))
    cases = []
    for case in grid.cases:
        hw = case.hardware_spec
        if hw is not None and changes:
            hw = dataclasses.replace(hw, **changes)
        cases.append(dataclasses.replace(case, hardware_spec=hw))
    return dataclasses.replace(grid, cases=tuple(cases))


def errors(names, changes: dict, out: str, vary=None) -> list[tuple]:
    """(measured, predicted, low, high, workers, mode) of every held-out fine point of the
    grids, each grid changed by ``vary(grid, changes)`` (default: ``without``)."""
    rows = []
    for name in names:
        grid = (vary or without)(load_grid(f"examples/grids/lab-{name}.toml"), changes)
        result = replay(grid, f"docs/validation/{name}/points.csv", os.path.join(out, name))
        for cr in result.cases:
            rows += [(p.measured, p.predicted, p.low, p.high, p.workers, cr.case.mode) for p in cr.points
                     if p.model == "fine" and p.measured and not getattr(p, "fitted", False)]
    return rows


def line(rows: list[tuple]) -> str:
    errs = [100 * (pred / meas - 1) for meas, pred, *_ in rows]
    inside = sum(lo is not None and lo <= meas <= hi for meas, _, lo, hi, *_ in rows)
    mean_abs = sum(map(abs, errs)) / len(errs)
    return (f"{mean_abs:.1f} % | {sum(errs) / len(errs):+.1f} % | {max(errs, key=abs):+.1f} % | "
            f"{inside} of {len(rows)}")


def saturated(rows: list[tuple]) -> str:
    """The signed mean error of the async points at ``SATURATED`` workers or more: the
    saturated links' bias, which the overall mean dilutes."""
    errs = [100 * (pred / meas - 1) for meas, pred, _, _, w, mode in rows if mode == "async" and w >= SATURATED]
    return f"{sum(errs) / len(errs):+.1f} % ({len(errs)})" if errs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", help="write the table here too")
    ap.add_argument("--first-grid-only", action="store_true",
                    help="hold out only the family's first grid (the table of 2026-11-27)")
    args = ap.parse_args()
    held_out = HELD_OUT if args.first_grid_only else HELD_OUT_ALL
    head = ("| knobs | fitted grids: mean \\|err\\| | signed | worst | interval holds | async W ≥ 3 signed "
            "| held-out trainer: mean \\|err\\| | signed | worst | interval holds | async W ≥ 3 signed |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    print(head, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for label, changes in KNOBS.items():
            f_rows = errors(FITTED, changes, os.path.join(tmp, "f"))
            h_rows = errors(held_out, changes, os.path.join(tmp, "h"))
            lines.append(f"| {label} | {line(f_rows)} | {saturated(f_rows)} | {line(h_rows)} | {saturated(h_rows)} |")
            print(lines[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "x", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
