"""The interval levels' margins, fitted on the lab trainer's runs and checked on held-out runs.

For each level L in spec.control.LEVELS and each model (fine, coarse): the simulated runs'
95 % interval is rescaled to L (normal quantiles), the model's error m is fitted by split
conformal prediction at L on the 66 single runs of issue 8's 22 points (rounded up at the fourth
decimal: spec.control.MODEL_ERROR_BY_LEVEL), and the intervals widened by m are checked on the
held-out trainer family (docs/validation/torch, and its second, third and fourth grids measured
after these margins were committed: docs/validation/torch-b, torch-c, torch-d), over the first
three grids together, on the earlier held-out runs (heldout200*, second-w2, heldout-margin),
over all four torch grids, on the fifth (async PS only, measured after the coarse model's
saturated links and its refitted margins were committed: docs/validation/torch-e), over all
five, on the sixth (async PS, measured after the simulator's shaped busy shares were committed:
docs/validation/torch-f), over all six, on the seventh (sync PS and DDP again: docs/validation/torch-g) and
over all seven: mean half-width and share of single runs inside.

The coarse model (one value, no simulated runs) is replayed from the committed runs and its
error fitted per family: the MVA of async PS on its 45 runs (COARSE_ASYNC_ERROR_BY_LEVEL), the
closed forms (sync PS, all-reduce) on their 21 (COARSE_ERROR_BY_LEVEL).

    python examples/lab/interval_levels.py      # ~20 s; prints the markdown table

``--replayed`` asks whether the committed fine margins still fit today's model: every grid is
replayed (the fine model, ~40 s), the margins are refitted on the 66 fitted runs alone and on
those with the lab trainer's 85 held-out runs (151), and each is checked on the six torch grids.

    python examples/lab/interval_levels.py --replayed
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import math
import os
import tempfile

from sgdsim.evaluate.margin import conformal_margin, level_scale
from sgdsim.spec.control import LEVELS, MODEL_ERROR_BY_LEVEL
from sgdsim.validate.cli import replay
from sgdsim.validate.grid import load_grid

FIT = [f"docs/validation/{g}/points.csv" for g in ("async", "cnn", "allreduce", "2ps", "widecnn")]
TORCH = ["docs/validation/torch/points.csv"]
TORCH_B = ["docs/validation/torch-b/points.csv"]  # measured after the margins were committed
TORCH_C = ["docs/validation/torch-c/points.csv"]  # so was this one
TORCH_D = ["docs/validation/torch-d/points.csv"]  # and the fourth
TORCH_E = ["docs/validation/torch-e/points.csv"]  # the fifth, async PS, after the saturated links
TORCH_F = ["docs/validation/torch-f/points.csv"]  # the sixth, async PS, after the shaped busy shares
TORCH_G = ["docs/validation/torch-g/points.csv"]  # the seventh, sync PS and DDP again, after the API's check
EARLIER = [f"docs/validation/{g}/points.csv" for g in (
    "heldout200", "heldout200b", "heldout200c", "heldout200d", "heldout200e", "second-w2", "heldout-margin")]


def replayed_checks(paths: list[str], tmp: str, model: str):
    """(case result, point) of every measured check of ``model``, as today's code predicts it
    (each grid replayed from its committed runs)."""
    for path in paths:
        name = os.path.basename(os.path.dirname(path))
        with contextlib.redirect_stderr(io.StringIO()):
            result = replay(load_grid(f"examples/grids/lab-{name}.toml"), path, os.path.join(tmp, name),
                            models=(model,))
        for cr in result.cases:
            yield from ((cr, p) for p in cr.points if p.model == model and p.measured and not p.fitted)


def coarse_runs(paths: list[str], tmp: str) -> dict[bool, list[tuple[float, float]]]:
    """The coarse model's (single run, predicted), replayed, by family (True: async PS)."""
    out: dict[bool, list] = {True: [], False: []}
    for cr, p in replayed_checks(paths, tmp, "coarse"):
        out[cr.case.mode == "async"] += [(x, p.predicted) for x in cr.measured_runs[p.workers]]
    return out


def runs(paths: list[str], model: str) -> list[tuple[float, float, float, float]]:
    """(a single run, predicted, low, high) of every measured check of ``model``."""
    out = []
    for path in paths:
        for r in csv.DictReader(open(path, encoding="utf-8")):
            if r["model"] != model or not r["measured"] or r.get("fitted") == "1":
                continue
            p = float(r["predicted"])
            lo, hi = (float(r["interval_low"]), float(r["interval_high"])) if r["interval_low"] else (p, p)
            out += [(float(x), p, lo, hi) for x in r["measured_runs"].split(";")]
    return out


def replayed_runs(paths: list[str], tmp: str) -> list[tuple[float, float, float, float]]:
    """``runs`` of the fine model as today's code predicts them."""
    return [(x, p.predicted, *((p.low, p.high) if p.low is not None else (p.predicted, p.predicted)))
            for cr, p in replayed_checks(paths, tmp, "fine") for x in cr.measured_runs[p.workers]]


def refit_table() -> None:
    """``--replayed``: the committed fine margins against margins refitted on today's replays."""
    with tempfile.TemporaryDirectory() as tmp:
        fit, earlier = replayed_runs(FIT, tmp), replayed_runs(EARLIER, tmp)
        six = replayed_runs(TORCH + TORCH_B + TORCH_C + TORCH_D + TORCH_E + TORCH_F, tmp)
    print("| level | margin m | fitted on | lab trainer, fitted (66): half-width | inside | lab trainer, "
          "held out (85) | inside | six torch grids (109) | inside |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for level in LEVELS:
        q = level_scale(level)
        for m, what in ((MODEL_ERROR_BY_LEVEL[level], "committed"), (fitted([score(*r, q) for r in fit], level),
                        "66 fitted runs, replayed"),
                        (fitted([score(*r, q) for r in fit + earlier], level), "151 lab-trainer runs, replayed")):
            print(f"| {level:.0%} | ±{m:.2%} | {what} | " + " | ".join(check(rs, m, q) for rs in (fit, earlier, six))
                  + " |")


def score(x: float, p: float, lo: float, hi: float, q: float) -> float:
    e = x / p - 1
    h = q * ((hi - p) / p if e >= 0 else (p - lo) / p)
    return math.sqrt(max(0.0, e * e - h * h))


def check(rs, m: float, q: float) -> str:
    width = sum((math.hypot(q * (hi - p) / p, m) + math.hypot(q * (p - lo) / p, m)) / 2
                for _, p, lo, hi in rs) / len(rs)
    inside = sum(score(*r, q) <= m + 1e-12 for r in rs)
    return f"±{width:.1%} | {inside} of {len(rs)} ({inside / len(rs):.0%})"


def fitted(scores: list[float], level: float) -> float:
    """The conformal margin rounded up at the fourth decimal (inf: too few runs for ``level``)."""
    return math.ceil(conformal_margin(scores, level) * 1e4) / 1e4


def coarse_margins(fit: dict[bool, list], level: float) -> dict[bool, float]:
    """Each coarse family's margin at ``level``, fitted on its runs (a point's score is its
    relative error)."""
    return {f: fitted([abs(x / p - 1) for x, p in group], level) for f, group in fit.items()}


def check_families(families: dict[bool, list], margins: dict[bool, float]) -> str:
    """``check`` for coarse points, whose interval is their family's margin alone."""
    rs = [(abs(x / p - 1), margins[f]) for f, group in families.items() for x, p in group]
    inside = sum(e <= m + 1e-12 for e, m in rs)
    return f"±{sum(m for _, m in rs) / len(rs):.1%} | {inside} of {len(rs)} ({inside / len(rs):.0%})"


def _joined(*families: dict[bool, list]) -> dict[bool, list]:
    return {f: [r for fam in families for r in fam[f]] for f in (True, False)}


def main() -> None:
    print("| model | level | margin m | lab trainer (fitted): half-width | inside "
          "| held-out trainer: half-width | inside | its second grid: half-width | inside "
          "| its third grid: half-width | inside | the three torch grids: half-width | inside "
          "| earlier held-out: half-width | inside | its fourth grid: half-width | inside "
          "| the four torch grids: half-width | inside | its fifth grid: half-width | inside "
          "| the five torch grids: half-width | inside | its sixth grid: half-width | inside "
          "| the six torch grids: half-width | inside | its seventh grid: half-width | inside "
          "| the seven torch grids: half-width | inside |")
    print("|---|---:|---:" + "|---:|---:" * 14 + "|")
    fit = runs(FIT, "fine")
    held = [runs(paths, "fine") for paths in (TORCH, TORCH_B, TORCH_C)]
    fourth, fifth, sixth = runs(TORCH_D, "fine"), runs(TORCH_E, "fine"), runs(TORCH_F, "fine")
    seventh = runs(TORCH_G, "fine")
    held += [held[0] + held[1] + held[2], runs(EARLIER, "fine"),  # the three torch grids, the rest,
             fourth, held[0] + held[1] + held[2] + fourth,  # then the fourth and all four,
             fifth, held[0] + held[1] + held[2] + fourth + fifth,  # the fifth and all five,
             sixth, held[0] + held[1] + held[2] + fourth + fifth + sixth,  # the sixth and all six,
             seventh, held[0] + held[1] + held[2] + fourth + fifth + sixth + seventh]  # and the seventh
    for level in LEVELS:
        q = level_scale(level)
        m = math.ceil(conformal_margin([score(*r, q) for r in fit], level) * 1e4) / 1e4
        print(f"| fine | {level:.0%} | ±{m:.2%} | {check(fit, m, q)} | "
              + " | ".join(check(rs, m, q) for rs in held) + " |")
    with tempfile.TemporaryDirectory() as tmp:
        fit, torch, torch_b, torch_c, earlier, torch_d, torch_e, torch_f, torch_g = (
            coarse_runs(paths, tmp) for paths in (FIT, TORCH, TORCH_B, TORCH_C, EARLIER, TORCH_D, TORCH_E, TORCH_F,
                                                  TORCH_G))
    for level in LEVELS:
        margins = coarse_margins(fit, level)
        groups = (fit, torch, torch_b, torch_c, _joined(torch, torch_b, torch_c), earlier, torch_d,
                  _joined(torch, torch_b, torch_c, torch_d), torch_e,
                  _joined(torch, torch_b, torch_c, torch_d, torch_e), torch_f,
                  _joined(torch, torch_b, torch_c, torch_d, torch_e, torch_f), torch_g,
                  _joined(torch, torch_b, torch_c, torch_d, torch_e, torch_f, torch_g))
        print(f"| coarse | {level:.0%} | ±{margins[True]:.2%} async, ±{margins[False]:.2%} closed forms | "
              + " | ".join(check_families(g, margins) for g in groups) + " |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replayed", action="store_true", help="the committed fine margins against "
                    "margins refitted on today's replays")
    if ap.parse_args().replayed:
        refit_table()
    else:
        main()
