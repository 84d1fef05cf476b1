"""The operator-time estimator (Tianshu §3.2) on synthetic operators with known complexity:
pruning rules, the principal-component search, held-out accuracy, and what the PC buys."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from estimator_support import CONV_DIMS, MM_DIMS, conv_like, log_int, matmul_like  # noqa: E402

from sgdsim.ops.estimator import search  # noqa: E402
from sgdsim.ops.estimator.features import (candidates, layout_of, log_inputs,  # noqa: E402
                                           n_candidates, one_hot, pc_text)
from sgdsim.ops.estimator.evaluation import evaluate, holdout_split  # noqa: E402
from sgdsim.ops.estimator.model import train  # noqa: E402

CONV_TRUTH = {"n": 1, "h": 1, "w": 1, "cin": 1, "cout": 1, "kh": 1, "kw": 1, "sh": -1, "sw": -1}
BUDGET = 6.0  # seconds per training: the whole file stays well under a minute


def exponents(est) -> dict:
    return {n.name: e for n, e in zip(est.layout.numeric, est.pc)}


@pytest.fixture(scope="module")
def mm():
    fit, test = holdout_split(matmul_like(300), 0.1, np.random.default_rng(0))
    return train(fit, MM_DIMS, np.random.default_rng(1), BUDGET, clock_stop=False), test


@pytest.fixture(scope="module")
def conv():
    records = conv_like(300)
    with_pc = train(records, CONV_DIMS, np.random.default_rng(2), BUDGET, clock_stop=False)
    no_pc = train(records, CONV_DIMS, np.random.default_rng(2), BUDGET, use_pc=False, clock_stop=False)
    return with_pc, no_pc


# ------------------------------------------------------------------------------ pruning rules

def test_pruning_rules_classify_every_kind_of_parameter():
    rng = np.random.default_rng(0)
    params = [{"n": log_int(rng, 1, 64), "k": int(rng.choice([1, 3, 5, 7])),  # dims
               "s": int(rng.integers(1, 9)),  # numeric, 8 values: may be inverse
               "pad": int(rng.integers(0, 9)),  # can be 0: log(pad + 1)
               "off": int(rng.integers(-20, 20)),  # negative: input only, never a factor
               "bias": int(rng.integers(2)),  # two values: a mode
               "algo": str(rng.choice(["a", "b", "c", "d", "e", "f", "g"])),  # string: mode
               "groups": 1}  # one value: no information
              for _ in range(200)]
    layout = layout_of(params, {"n", "k"})
    kinds = {n.name: (n.allowed, n.offset) for n in layout.numeric}
    assert kinds == {"n": ((1, 0), 0), "k": ((1, 0), 0), "s": ((1, -1, 0), 0),
                     "pad": ((1, -1, 0), 1), "off": ((0,), -1)}
    assert dict(layout.modes)["bias"] == ("0", "1") and len(dict(layout.modes)["algo"]) == 7
    assert layout.constant == (("groups", "1"),)
    # 2 dims x 2 numeric (3 choices each) x the signed one (1): 2^2 3^2 - all-null = 35
    assert n_candidates(layout) == 35 == len(set(candidates(layout)))
    assert layout.width == 5 + 2 + 7


def test_log_inputs_offset_and_clamp_below_the_training_range():
    layout = layout_of([{"pad": p, "m": m} for p, m in zip(range(0, 10), range(8, 18))],
                       {"m"})
    x = log_inputs([{"pad": 0, "m": 8}, {"pad": 3, "m": 2}, {"pad": 20, "m": 100}], layout)
    by = {n.name: i for i, n in enumerate(layout.numeric)}
    assert np.allclose(x[:, by["pad"]], np.log([1, 4, 21]))
    assert np.allclose(x[:, by["m"]], np.log([8, 8, 100]))  # m=2 < 8 seen: clamped to 8
    assert [n.name for n in layout.numeric] == ["m", "pad"]
    assert pc_text(layout, (1, 0)) == "m" and pc_text(layout, (1, -1)) == "m/(pad+1)"
    assert pc_text(layout, (0, -1)) == "1/(pad+1)" and pc_text(layout, None) == "-"


# ------------------------------------------------------------------- principal component

def test_screen_ranks_the_true_conv_function_first_exhaustive_or_by_descent(monkeypatch):
    records = conv_like(300)
    params = [r.params for r in records]
    layout = layout_of(params, CONV_DIMS)
    assert n_candidates(layout) == 2 ** 7 * 3 ** 2 - 1 > search.EXHAUSTIVE_MAX
    args = (log_inputs(params, layout), one_hot(params, layout),
            np.log([[r.fwd_s] for r in records]), layout)
    truth = tuple(CONV_TRUTH[n.name] for n in layout.numeric)
    by_descent = search.screen(*args)
    assert by_descent[0] == truth and len(by_descent) < 100  # not every candidate scored
    monkeypatch.setattr(search, "EXHAUSTIVE_MAX", 10 ** 4)
    exhaustive = search.screen(*args)
    assert exhaustive[0] == truth and len(exhaustive) == n_candidates(layout)


def test_matmul_complexity_is_found_and_held_out_shapes_are_predicted(mm):
    est, test = mm
    assert exponents(est) == {"m": 1, "k": 1, "n": 1}
    assert "tb" in dict(est.layout.modes)  # a mode: one-hot input, not a factor
    err = evaluate(est, test)
    assert err["fwd_mean"] < 0.05 and err["bwd_mean"] < 0.05 and err["sum_mean"] < 0.05
    assert est.stats["pc"] == "k*m*n" and est.stats["samples"] == 270


def test_conv_strides_are_found_inversely_proportional(conv):
    with_pc, _ = conv
    assert exponents(with_pc) == CONV_TRUTH
    assert with_pc.stats["pc"] == "cin*cout*h*kh*kw*n*w/(sh*sw)"
    judged = with_pc.stats["pc_judged"]  # the true function clearly beat the runner-up
    assert judged[0][0] == with_pc.stats["pc"] and 2 * judged[0][1] < judged[1][1]


def test_with_and_without_the_principal_component(conv):
    """Both near the noise floor (~1.6 %) on fresh shapes of the trained range. The paper's
    Table 3 has the PC cutting the error 4x; in log space a product of powers is a sum that
    the MLP forms itself from the log inputs, and here the PC neither clearly helps nor hurts
    (5 seeds: with 2.2-3.6 %, without 2.0-2.6 %; package docstring). What the PC does show
    is that it alone explains the time (the judge in the test above)."""
    with_pc, no_pc = conv
    inside = conv_like(400, seed=77)
    a, b = evaluate(with_pc, inside)["fwd_mean"], evaluate(no_pc, inside)["fwd_mean"]
    assert a < 0.04 and b < 0.04 and a < 1.5 * b and no_pc.pc is None
    assert len(no_pc.x_mean) == len(with_pc.x_mean) - 1  # the PC is the one extra input
