"""examples/ops/first_shapes.py: a grid cut back to each named type's earliest rows, the
other types untouched, and the old rule's grid read back from a real export (runs 38, 39)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "ops"))

from first_shapes import cut  # noqa: E402

from sgdsim.ops.records import Device, OpRecord  # noqa: E402


def _row(op, at, device="d", dtype="float32"):
    return OpRecord(Device(device, "cpu", "test", ""), op, {"numel": 1}, dtype, 1e-6, 2e-6, 3, 0.01, 0.0, at)


def test_cut_keeps_each_named_types_earliest_rows():
    rows = [_row("mm", t) for t in (5, 1, 4, 2, 3)] + [_row("relu", t) for t in (9, 8, 7)]
    rows += [_row("mm", 0.5, device="other"), _row("mm", 0.1, dtype="bfloat16")]
    kept = cut(rows, {"mm"}, 2)

    def times(device, op, dtype="float32"):
        return sorted(float(r.measured_at) for r in kept
                      if (r.device.name, r.op, r.dtype) == (device, op, dtype))

    assert times("d", "mm") == [1.0, 2.0]              # the two earliest, not the first two listed
    assert times("d", "relu") == [7.0, 8.0, 9.0]       # not named: as it was
    assert times("other", "mm") == [0.5] and times("d", "mm", "bfloat16") == [0.1]
    assert len(kept) == 7


def test_run_38s_export_cut_to_the_old_rule(tmp_path):
    """The committed run-38 grid: 30 of each many-rate type, the others' 30 as measured."""
    src = os.path.join(ROOT, "docs/validation/ops/db-grid-epyc-2026-12-07-run38.csv")
    out = tmp_path / "first30.csv"
    got = subprocess.run([sys.executable, os.path.join(ROOT, "examples/ops/first_shapes.py"), src, str(out),
                          "addmm,mm,bmm,conv2d,eltwise,sdpa", "30"], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    with open(out, newline="") as f:
        counts: dict[str, int] = {}
        for r in csv.DictReader(f):
            counts[r["op"]] = counts.get(r["op"], 0) + 1
    assert set(counts.values()) == {30} and len(counts) == 17 and sum(counts.values()) == 510
    assert got.stdout.strip() == f"wrote 510 of 775 rows to {out}"


def _timed_and_drawn(path, seed):
    import json

    from sgdsim.ops.collect import grid_calls

    drawn: dict[str, list[str]] = {}
    for op, params, _ in grid_calls(["conv2d", "eltwise", "mm"], 30, seed):
        drawn.setdefault(op, []).append(json.dumps(params, sort_keys=True))
    with open(os.path.join(ROOT, path), newline="") as f:
        rows = list(csv.DictReader(f))
    for op, shapes in drawn.items():
        timed = sorted((r for r in rows if r["op"] == op), key=lambda r: float(r["measured_at"]))
        yield [json.dumps(json.loads(r["params"]), sort_keys=True) for r in timed], shapes


def test_a_grids_earliest_rows_are_its_first_drawn_shapes():
    """What the cut rests on: run 38's rows, by time, are its grid's draws in order (seed 47),
    the first of today's rule's larger grid; run 47's, measured with today's rule (seed 56),
    are all of them but mm's last 12 (a product draws 102 since runs 54 and 55 added two rates, 90 then)."""
    for timed, shapes in _timed_and_drawn("docs/validation/ops/db-grid-epyc-2026-12-07-run38.csv", 47):
        assert len(timed) < len(shapes) and timed == shapes[:len(timed)]
    counts = []
    for timed, shapes in _timed_and_drawn("docs/validation/ops/run47/db-grid-epyc-2026-12-07-run47.csv", 56):
        assert timed == shapes[:len(timed)]
        counts.append((len(timed), len(shapes)))
    assert counts == [(120, 120), (120, 120), (90, 102)]  # conv2d, eltwise, mm
