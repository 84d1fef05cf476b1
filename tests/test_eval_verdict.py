"""``ops eval``'s verdict against the noise floor says when its two medians cannot decide it:
the standard error it uses is checked against simulated medians, and the cases by hand."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.report import DECIDED_Z, MEDIAN_REL_SE, render, verdict


@pytest.mark.parametrize("n", [10, 20, 100])
def test_the_medians_standard_error_matches_simulated_medians(n):
    rng = np.random.default_rng(n)
    medians = np.median(np.abs(rng.standard_normal((20000, n))), axis=1)
    rel_sd = medians.std() / medians.mean()
    # the asymptotic figure: within 2 % at 100 rows; at 10-20 rows the sample medians are
    # 6-10 % tighter than it says (an even count averages two middle values), so the verdict
    # errs towards "undecided", not towards a verdict the rows cannot carry
    formula = MEDIAN_REL_SE / np.sqrt(n)
    assert 0.88 * formula <= rel_sd <= formula and (n < 100 or rel_sd >= 0.98 * formula)


def test_verdicts_by_hand():
    # 10 % against a bar of 15 %: log(10 / 15) = -0.405
    se_small = MEDIAN_REL_SE * np.sqrt(2 / 10)  # 0.52: |z| = 0.78, undecided
    assert -0.405 / se_small > -DECIDED_Z
    assert verdict(0.10, 10, 0.10, 10).startswith("undecided (each median ±86%")
    assert verdict(0.10, 100, 0.10, 100) == "yes"  # se 0.165: z = -2.46
    assert verdict(0.20, 100, 0.10, 100) == "**no**"  # log(20 / 15) = 0.288: z = 1.74
    assert verdict(0.17, 100, 0.10, 100).startswith("undecided")  # z = 0.76
    assert verdict(0.14, 100, 0.10, None) == "yes" and verdict(0.16, 100, 0.10, None) == "**no**"


def test_the_table_shows_the_retests_rows_and_the_verdict():
    row = {"op": "relu", "dtype": "float32", "samples": 100, "held_out": 10, "arch": "L1N8", "pc": "-",
           "error": 0.1, "error_max": 0.2, "bwd_error": 0.1, "weighted_error": 0.1, "no_pc_error": 0.1,
           "no_pc_bwd_error": 0.1, "no_pc_weighted_error": 0.1, "train_s": 1, "error_median": 0.2,
           "shipped_median": 0.09, "shipped_arch": "terms"}
    text = render([row], {("relu", "float32"): {"fwd_median": 0.08, "rows": 10}})
    assert "| relu | float32 | 9.0% (terms) | 20.0% | 8.0% (10) | undecided" in text
    text = render([{**row, "held_out": 400}], {("relu", "float32"): {"fwd_median": 0.08, "rows": 400}})
    assert "| 8.0% (400) | yes |" in text
