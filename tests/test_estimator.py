"""The estimator (Tianshu §3.2) on synthetic operators whose complexity function is known."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.estimator.features import layout_of  # noqa: E402
from sgdsim.ops.estimator.model import OpEstimator, evaluate, holdout_split, train  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402

DEV = Device("synthetic", "cpu")


def log_int(rng, low, high):
    return int(np.exp(rng.uniform(np.log(low), np.log(high))))


def matmul_like(n, seed=0):
    """t = 2e-9 m k n + 5 µs, a transposed-B mode that costs 30 % more, 2 % noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        p = {"m": log_int(rng, 8, 2048), "k": log_int(rng, 8, 2048), "n": log_int(rng, 8, 2048),
             "tb": int(rng.integers(2))}
        t = (2e-9 * p["m"] * p["k"] * p["n"] * (1.3 if p["tb"] else 1) + 5e-6) * \
            rng.lognormal(0, 0.02)
        out.append(OpRecord(DEV, "mm", p, "float32", t, 2 * t))
    return out


def conv_like(n, seed=0):
    """t proportional to n h w c k^2 / s^2 (stride with 8 values: numeric, may be inverse)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        p = {"n": log_int(rng, 1, 64), "h": log_int(rng, 4, 128), "c": log_int(rng, 3, 512),
             "k": int(rng.choice([1, 3, 5, 7])), "s": int(rng.integers(1, 9))}
        t = 1e-10 * p["n"] * p["h"] ** 2 * p["c"] * p["k"] ** 2 / p["s"] ** 2 * \
            rng.lognormal(0, 0.02) + 2e-6
        out.append(OpRecord(DEV, "conv", p, "float32", t, 0.0))
    return out


def test_pruning_rules_classify_the_parameters():
    layout = layout_of([r.params for r in conv_like(50)], {"n", "h", "c", "k"})
    allowed = dict(zip(layout.numeric, layout.exponents_allowed))
    assert allowed == {"c": (1, 0), "h": (1, 0), "k": (1, 0), "n": (1, 0), "s": (1, -1, 0)}
    layout = layout_of([r.params for r in matmul_like(50)], {"m", "k", "n"})
    assert [n for n, _ in layout.modes] == ["tb"]  # two values: a mode, not a factor


def test_the_search_recovers_matmul_complexity_and_predicts_held_out_shapes():
    fit, test = holdout_split(matmul_like(300), 0.1, np.random.default_rng(0))
    est = train(fit, {"m", "k", "n"}, np.random.default_rng(1), budget_s=120)
    assert dict(zip(est.layout.numeric, est.pc)) == {"k": 1, "m": 1, "n": 1}
    err = evaluate(est, test)
    assert err["fwd_mean"] < 0.05 and err["bwd_mean"] < 0.05


def test_stride_is_found_inversely_proportional_and_the_pc_helps():
    records = conv_like(300)
    fit, test = holdout_split(records, 0.1, np.random.default_rng(0))
    with_pc = train(fit, {"n", "h", "c", "k"}, np.random.default_rng(1), budget_s=120)
    assert dict(zip(with_pc.layout.numeric, with_pc.pc)) == {"n": 1, "h": 1, "c": 1, "k": 1,
                                                             "s": -1}
    no_pc = train(fit, {"n", "h", "c", "k"}, np.random.default_rng(1), budget_s=120,
                  use_pc=False)
    assert evaluate(with_pc, test)["fwd_mean"] < evaluate(no_pc, test)["fwd_mean"]
    assert evaluate(with_pc, test)["bwd_max"] == 0.0  # no backward anywhere: predicts none
    assert not with_pc.predict([test[0].params])[1].any()


def test_json_round_trip_and_determinism():
    records = matmul_like(80, seed=3)
    a = train(records, {"m", "k", "n"}, np.random.default_rng(7), budget_s=120)
    b = train(records, {"m", "k", "n"}, np.random.default_rng(7), budget_s=120)
    strip = [{**r.params} for r in records]
    assert np.array_equal(a.predict(strip)[0], b.predict(strip)[0])
    again = OpEstimator.from_json(a.to_json())
    assert np.allclose(again.predict(strip)[0], a.predict(strip)[0], rtol=1e-12)
    assert np.allclose(again.predict(strip)[1], a.predict(strip)[1], rtol=1e-12)


def test_bad_models_and_parameters_are_one_line_errors():
    est = train(matmul_like(40), {"m", "k", "n"}, np.random.default_rng(0), budget_s=60)
    with pytest.raises(ConfigError, match="missing"):
        est.predict([{"m": 1, "k": 2}])
    with pytest.raises(ConfigError, match="not a valid"):
        OpEstimator.from_json('{"format": "something else"}')
    broken = est.to_json().replace('"has_bwd": true', '"has_bwd": false')
    with pytest.raises(ConfigError, match="not a valid"):
        OpEstimator.from_json(broken)
    with pytest.raises(ConfigError, match="too few"):
        train(matmul_like(5), {"m"}, np.random.default_rng(0))
