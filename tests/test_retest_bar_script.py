"""examples/ops/retest_bar.py: the bar from every retested row, and from random smaller
retests, checked by hand on a small file."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "ops"))

from retest_bar import bar_rows, held_out, retest_errors  # noqa: E402

from sgdsim.errors import ConfigError  # noqa: E402


def _pairs(tmp_path, rows):
    path = tmp_path / "pairs.csv"
    lines = ["op,dtype,params,fwd_s,fwd_again_s,bwd_s,bwd_again_s,fwd_rel,fwd_again_rel,bwd_rel,bwd_again_rel"]
    lines += [f"{op},float32,{{}},{a},{b},,,{a},{b},," for op, a, b in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_bar_is_one_and_a_half_times_the_median_of_every_row(tmp_path):
    # relu's rows differ by 2, 4, 6, 8 and 10 %; a stored 0 is not compared
    rows = [("relu", 1.0, 1.0 + d) for d in (0.02, 0.04, 0.06, 0.08, 0.10)] + [("relu", 0.0, 1.0)]
    errors = retest_errors(_pairs(tmp_path, rows))
    assert errors["relu"] == pytest.approx([0.02, 0.04, 0.06, 0.08, 0.10])
    (row,) = bar_rows(errors, {"relu": 0.08}, 5, 10, np.random.default_rng(0))
    assert row["retest"] == pytest.approx(0.06) and row["bar"] == pytest.approx(0.09)
    # a "smaller" retest of all five rows is the same retest: its bar never moves
    assert row["small_lo"] == row["small_hi"] == pytest.approx(0.09) and row["small_pass"] == 1.0
    (row,) = bar_rows(errors, {"relu": 0.08}, 1, 2000, np.random.default_rng(0))
    # one row a retest: 1.5x one of the five errors, at least 0.08 for 0.06, 0.08 and 0.10
    assert row["small_pass"] == pytest.approx(0.6, abs=0.05)
    assert row["small_lo"] == pytest.approx(0.03) and row["small_hi"] == pytest.approx(0.15)


def test_held_out_medians_come_from_either_table(tmp_path):
    terms = tmp_path / "terms.md"
    terms.write_text("| operator | grid: forward / backward |\n|---|---:|\n| addmm | 6.2% / 8.4% |\n")
    prior = tmp_path / "prior.md"
    prior.write_text("| operator | rows | median error, MLP | auto | mean |\n|---|---:|---:|---:|---:|\n"
                     "| relu | 100 | 9.9% | 8.2% | 11.9% |\n| addmm | 100 | 1.0% | 1.0% | 1.0% |\n")
    assert held_out([str(terms), str(prior)]) == pytest.approx({"addmm": 0.062, "relu": 0.082})


def test_files_it_cannot_read_are_named_in_one_error(tmp_path):
    with pytest.raises(ConfigError, match="not a CSV"):
        retest_errors(str(tmp_path / "missing.csv"))
    with pytest.raises(ConfigError, match="cannot read"):
        held_out([str(tmp_path / "missing.md")])
    bad = tmp_path / "bad.md"
    bad.write_text("| relu | many |\n")
    with pytest.raises(ConfigError, match="not a table"):
        held_out([str(bad)])
