"""``OpEstimator`` as a stored artefact: numpy prediction, JSON, determinism, errors, zero
backward times, ``evaluate`` and the Table-3 report."""
from __future__ import annotations

import dataclasses

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sklearn")

from estimator_support import MM_DIMS, matmul_like, relu_like  # noqa: E402

from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.estimator.evaluation import evaluate, holdout_split  # noqa: E402
from sgdsim.ops.estimator.model import OpEstimator, forward, train  # noqa: E402
from sgdsim.ops.estimator.report import render, table3_row  # noqa: E402
from sgdsim.ops.estimator.search import fit_mlp  # noqa: E402


@pytest.fixture(scope="module")
def small():
    """A quick model: 80 rows, a 2-second plan, never cut short by a loaded machine's clock."""
    records = matmul_like(80, seed=3)
    return train(records, MM_DIMS, np.random.default_rng(7), budget_s=2.0, clock_stop=False), records


def test_numpy_forward_pass_equals_sklearn_predict():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 5))
    for outputs in (1, 2):
        y = np.stack([np.sin(x[:, 0]) + x[:, 1], x[:, 2] * x[:, 3]], axis=1)[:, :outputs]
        model = fit_mlp(x, y, (4, 7), seed=1, iters=100)
        ours = forward(x, model.coefs_, model.intercepts_)
        assert ours.shape == (50, outputs)
        assert np.allclose(ours, model.predict(x).reshape(50, -1), rtol=1e-12, atol=1e-14)


def test_json_round_trip_predicts_identically(small):
    est, records = small
    params = [r.params for r in records]
    again = OpEstimator.from_json(est.to_json())
    for ours, theirs in zip(est.predict(params), again.predict(params)):
        assert np.allclose(ours, theirs, rtol=1e-12, atol=0)
    assert again.to_json() == est.to_json()
    stats = json.loads(est.to_json())["stats"]
    assert "train_s" not in stats and stats["samples"] == 80 and "rng_state" in stats
    assert 0 < stats["validation_error"] < 1 and stats["arch"].startswith("L")


def test_a_model_stored_before_the_largest_values_were_kept_still_loads(small):
    from sgdsim.ops.estimator.features import unseen_modes

    est, records = small
    old = json.loads(est.to_json())
    old["layout"]["numeric"] = [n[:4] for n in old["layout"]["numeric"]]
    again = OpEstimator.from_json(json.dumps(old))
    params = [r.params for r in records]
    for ours, theirs in zip(est.predict(params), again.predict(params)):
        assert np.allclose(ours, theirs, rtol=1e-12, atol=0)
    huge = [{**params[0], **{n.name: 1e9 for n in est.layout.numeric}}]
    assert unseen_modes(huge, est.layout) and not unseen_modes(huge, again.layout)


def test_the_same_seed_gives_the_same_model_and_another_seed_another(small):
    est, records = small
    same = train(records, MM_DIMS, np.random.default_rng(7), budget_s=2.0, clock_stop=False)
    assert same.to_json() == est.to_json()
    other = train(records, MM_DIMS, np.random.default_rng(8), budget_s=2.0, clock_stop=False)
    assert other.to_json() != est.to_json()


def test_parameters_that_do_not_match_the_training_are_one_line_errors(small):
    est, records = small
    good = dict(records[0].params)
    for bad, text in (({k: v for k, v in good.items() if k != "k"}, "missing \\['k'\\]"),
                      ({**good, "extra": 1}, "unknown \\['extra'\\]"),
                      ({**good, "m": "big"}, "m must be a number"),
                      ({**good, "m": float("nan")}, "m must be a number")):
        with pytest.raises(ConfigError, match=text) as info:
            est.predict([good, bad])
        assert "\n" not in str(info.value)
    assert est.predict([])[0].shape == (0,)


@pytest.mark.parametrize("edit", [
    lambda d: "not json {",
    lambda d: json.dumps([1, 2]),
    lambda d: json.dumps({**d, "format": "sgdsim-op-estimator/0"}),
    lambda d: json.dumps({k: v for k, v in d.items() if k != "weights"}),
    lambda d: json.dumps({**d, "has_bwd": not d["has_bwd"]}),  # output width
    lambda d: json.dumps({**d, "x_mean": d["x_mean"][:-1]}),  # input width
    lambda d: json.dumps({**d, "x_std": [0.0] * len(d["x_std"])}),
    lambda d: json.dumps({**d, "pc": [1, 1]}),  # three parameters, two exponents
    lambda d: json.dumps({**d, "pc": [-1, 1, 1]}),  # a dimension cannot be inverse
    lambda d: json.dumps({**d, "biases": d["biases"][:-1]}),
    lambda d: json.dumps(d).replace(str(d["weights"][0][0][0]), "NaN", 1),
])
def test_bad_model_texts_are_one_line_config_errors(small, edit):
    est, _ = small
    with pytest.raises(ConfigError, match="not a valid sgdsim operator estimator") as info:
        OpEstimator.from_json(edit(json.loads(est.to_json())))
    assert "\n" not in str(info.value)


def test_training_refuses_what_it_cannot_learn():
    with pytest.raises(ConfigError, match="too few"):
        train(matmul_like(5), MM_DIMS, np.random.default_rng(0))
    mixed = matmul_like(10) + matmul_like(10, dtype="bfloat16")
    with pytest.raises(ConfigError, match="one estimator per operator type and dtype"):
        train(mixed, MM_DIMS, np.random.default_rng(0))
    odd = matmul_like(12)
    odd[3] = replace(odd[3], params={**odd[3].params, "extra": 1})
    with pytest.raises(ConfigError, match="name different parameters"):
        train(odd, MM_DIMS, np.random.default_rng(0))
    zero = [replace(r, fwd_s=0.0) for r in matmul_like(12)]
    with pytest.raises(ConfigError, match="0 measurement.s. to train on, too few .* 12 more are upper bounds .or 0 s."):
        train(zero, MM_DIMS, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="explicit numpy Generator"):
        holdout_split(matmul_like(12), 0.1)


def test_a_mode_without_backward_predicts_zero_backward():
    fit, test = holdout_split(relu_like(200), 0.1, np.random.default_rng(0))
    est = train(fit, {"numel"}, np.random.default_rng(1), budget_s=3.0, clock_stop=False)
    assert est.has_bwd and est.zero_bwd == (("gi", "0"),) and est.pc == (1,)
    fwd, bwd = est.predict([{"numel": 10 ** 6, "gi": 0}, {"numel": 10 ** 6, "gi": 1}])
    assert bwd[0] == 0 and bwd[1] == pytest.approx(1.5 * fwd[1], rel=0.1)
    err = evaluate(est, test)
    assert err["fwd_mean"] < 0.05 and err["bwd_mean"] < 0.05 and err["sum_mean"] < 0.05
    none = [replace(r, bwd_s=0.0) for r in fit]
    no_bwd = train(none, {"numel"}, np.random.default_rng(1), budget_s=1.0, clock_stop=False)
    assert not no_bwd.has_bwd and not no_bwd.predict([r.params for r in test])[1].any()


def test_evaluate_measures_relative_error_exactly(small):
    est, records = small
    fwd, bwd = est.predict([r.params for r in records])
    # measured 25 % above the prediction: |p - 1.25 p| / (1.25 p) = 0.2 everywhere
    shifted = [replace(r, fwd_s=1.25 * f, bwd_s=1.25 * b) for r, f, b in zip(records, fwd, bwd)]
    err = evaluate(est, shifted)
    for key in ("fwd_mean", "fwd_max", "bwd_mean", "bwd_max", "sum_mean", "sum_max"):
        assert err[key] == pytest.approx(0.2, rel=1e-9)
    assert err["sum_weighted"] == pytest.approx(0.2, rel=1e-9)
    assert err["n"] == 80


def test_the_time_weighted_error_is_dominated_by_the_long_calls(small):
    est, records = small
    fwd, bwd = est.predict([r.params for r in records])
    total = fwd + bwd
    big = int(np.argmax(total))
    # every call but the longest measured at twice the prediction (relative error 0.5 each),
    # the longest exactly: the weighted error is the others' share of the measured time, / 2
    doubled = [replace(r, fwd_s=f * (1 if i == big else 2), bwd_s=b * (1 if i == big else 2))
               for i, (r, f, b) in enumerate(zip(records, fwd, bwd))]
    err = evaluate(est, doubled)
    others = 2 * (total.sum() - total[big])
    assert err["sum_weighted"] == pytest.approx(0.5 * others / (others + total[big]), rel=1e-9)
    assert err["sum_mean"] == pytest.approx(0.5 * (len(records) - 1) / len(records), rel=1e-9)


def test_holdout_split_is_a_seeded_partition():
    records = matmul_like(50)
    fit, test = holdout_split(records, 0.1, np.random.default_rng(3))
    assert len(test) == 5 and len(fit) == 45
    assert sorted(map(id, fit + test)) == sorted(map(id, records))
    again, _ = holdout_split(records, 0.1, np.random.default_rng(3))
    assert [id(r) for r in again] == [id(r) for r in fit]


def test_table3_row_trains_both_on_the_same_split_and_renders():
    # mm's terms read "ga" (A needs a gradient) where these rows say "gi"
    records = [dataclasses.replace(r, params={**{k: v for k, v in r.params.items() if k != "gi"}, "ga": 1})
               for r in matmul_like(60, seed=5)]
    row = table3_row(records, MM_DIMS, seed=0, budget_s=1.0)
    assert row["op"] == "mm" and row["samples"] == 60 and row["held_out"] == 6
    assert row["pc"] == "k*m*n" and row["arch"].startswith("L")
    assert 0 < row["error"] <= row["error_max"] and row["no_pc_error"] > 0
    assert row["shipped_median"] >= 0 and row["shipped_arch"] == "terms"  # mm has terms: auto fits them
    text = render([row, {**row, "op": "mm2", "error": 3 * row["error"]}])
    lines = text.splitlines()
    assert len(lines) == 5 and lines[2].startswith("| mm | float32 | 60 (6) |")
    assert f"**{2 * row['error']:.2%}**" in lines[-1]


def test_auto_reports_the_time_of_both_trainings_it_ran(monkeypatch):
    """``--prior auto`` trains with and without the prior and keeps one: its ``train_s`` (the
    "s" column of ``ops train``) is what both took, not the kept one's half."""
    from types import SimpleNamespace

    from sgdsim.ops.estimator import model

    def fake_train(records, dims, rng, budget_s, use_pc, arch, clock_stop, use_prior):
        err, took = (0.2, 3.0) if use_prior else (0.3, 5.0)
        return SimpleNamespace(prior={"fwd": [1, 1]} if use_prior else None,
                               stats={"validation_error": err, "train_s": took})

    monkeypatch.setattr(model, "train", fake_train)
    best = model._with_or_without_prior([], (), np.random.default_rng(0), 4.0, True, None, False)
    assert best.prior is not None  # the lower validation error is kept
    assert best.stats["train_s"] == 8.0
    assert best.stats["validation_errors_without_with_prior"] == [0.3, 0.2]
