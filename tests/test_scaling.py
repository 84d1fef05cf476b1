"""The KDD'15 model and optimizer (``sgdsim optimize``): equations by hand, the fast mapping
against the reference, the DP against exhaustive enumeration, Eqs. 10-11 against the
simulator, the layer data against published totals, and one-line errors."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import sgdsim
from sgdsim.cli import main
from sgdsim.errors import ConfigError
from sgdsim.scaling.layers import load_layers, synthetic
from sgdsim.scaling.microbench import measure_constants
from sgdsim.scaling.model import (Config, Constants, Network, compute_s, epoch_time_s,
                                  greedy_mapping, load_constants, read_s, read_times_s, remote,
                                  save_constants, transfer_s)
from sgdsim.scaling.search import Problem, brute_force, optimize, stripe_fractions

C = Constants(muladd_s=1e-9, act_s=5e-9, err_s=2e-9, interference=(1.0, 1.5, 2.2))
NET = Network(bandwidth_bps=1e9, latency_s=1e-4)


def test_equations_5_to_9_by_hand():
    layer, nxt = synthetic([(100, 1000, 4000, False), (10, 1000, 4000, False)])
    # U_f = 1e-9·1000/2 + 5e-9·100/2; U_b = 1e-9·1000/2 + 2e-9·50; U_w = 1e-9·500
    assert compute_s(layer, nxt.connections, 2, C) == pytest.approx(
        5e-7 + 2.5e-7 + 5e-7 + 1e-7 + 5e-7, rel=1e-12)
    assert transfer_s(0, 3, NET) == 0.0  # nothing remote, nothing to wait for
    assert transfer_s(1000, 3, NET) == pytest.approx(1e-4 + 1000 * 32 * 3 / 1e9, rel=1e-12)
    assert C.interf(2) == 1.5 and C.interf(7) == 2.2


def test_equations_10_and_11_by_hand():
    layers = synthetic([(10, 10, 1e6, False), (10, 10, 3e6, False)])
    cfg = Config(n_ps=2, n_mr=4, n_wr=3, P=(1, 1), H=(1, 2), R=(1, 1))
    lo, hi = read_times_s(layers, cfg, NET)
    assert hi == pytest.approx(2e-4 + 4 * 8e6 / 1e9 + 4 * 24e6 * 2 / 1e9, rel=1e-12)
    assert lo == pytest.approx(2e-4 + 8e6 / 1e9 / 2 + 24e6 * 2 / 1e9 / 2, rel=1e-12)
    assert read_s(0.0, 1, 4, 2, 3, NET, True) == 0.0


def test_epoch_time_of_a_data_parallel_configuration_by_hand():
    """No partitions: no activation traffic; T = N·(Σ U/Q + Mw/N_read)."""
    layers = synthetic([(100, 1000, 4e3, False), (10, 1000, 4e3, False)])
    cfg = Config(n_ps=1, n_mr=3, n_wr=2, P=(1, 1), H=(2, 1), R=(2, 1))
    U0 = 1.5 * compute_s(layers[0], 1000, 1, C)
    U1 = compute_s(layers[1], 0.0, 1, C)
    reads = (1e-4 + 3 * 32e3 * 2 / 1e9) + (1e-4 + 3 * 32e3 / 1e9)
    expected = 1000 * (U0 / (2 * 2 * 3) + U1 / 3 + reads / 10)
    assert epoch_time_s(layers, cfg, C, NET, 1000, 10) == pytest.approx(expected, rel=1e-12)


def test_remote_traffic_of_stripes_by_hand():
    assert greedy_mapping(2, 2) == [0, 1] and greedy_mapping(1, 3) == [0, None, None]
    # convolution, same stripes: nothing crosses; FC: all but one's own stripe
    assert remote(100, 60, 2, 2, local=True) == (0.0, 0.0)
    assert remote(100, 60, 2, 2, local=False) == pytest.approx((50.0, 30.0))
    # 2 stripes then 1: the lone stripe needs all 100 activations, holds 50; the stripe of
    # layer l-1 without a partner needs all 60 error terms (FC) or its half of them (conv)
    assert remote(100, 60, 2, 1, local=False) == pytest.approx((50.0, 60.0))
    assert remote(100, 60, 2, 1, local=True) == pytest.approx((50.0, 30.0))
    assert remote(100, 60, 1, 1, local=False) == (0.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(pp=st.integers(1, 24), p=st.integers(1, 24), local=st.booleans())
def test_fast_stripe_fractions_equal_the_reference_mapping(pp, p, local):
    A, E = remote(1.0, 1.0, pp, p, local)
    a, e = stripe_fractions(pp, p, local)
    assert a == pytest.approx(A, abs=1e-12) and e == pytest.approx(E, abs=1e-12)


layer_sizes = st.tuples(st.floats(1, 1e5), st.floats(0, 1e8), st.floats(0, 1e8), st.booleans())


def _problem(sizes, machines, cores, worst, max_r, latency):
    return Problem(tuple(synthetic(sizes)), machines, cores, C, Network(1e9, latency), 10_000, 32,
                   worst, max_r)


def _same(dp, bf, prob):
    assert dp.epoch_time_s == pytest.approx(bf.epoch_time_s, rel=1e-9)
    dp.config.check(prob.machines, prob.cores)
    again = epoch_time_s(list(prob.layers), dp.config, prob.constants, prob.network,
                         prob.n_sample, prob.n_read, prob.worst)
    assert again == pytest.approx(dp.epoch_time_s, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(layer_sizes, min_size=1, max_size=3), machines=st.integers(2, 5),
       cores=st.integers(1, 2), worst=st.booleans(), max_r=st.sampled_from([None, 1]),
       latency=st.sampled_from([0.0, 1e-4]))
def test_dp_equals_exhaustive_enumeration(sizes, machines, cores, worst, max_r, latency):
    prob = _problem(sizes, machines, cores, worst, max_r, latency)
    _same(optimize(prob), brute_force(prob), prob)


@pytest.mark.parametrize("worst", [True, False])
def test_dp_equals_exhaustive_enumeration_on_six_machines_and_four_layers(worst):
    rng = np.random.default_rng(7)
    sizes = [(float(rng.uniform(1e2, 1e5)), float(rng.uniform(1e5, 1e8)), float(rng.uniform(1e3, 1e7)),
              bool(rng.integers(2))) for _ in range(4)]
    prob = _problem(sizes, 6, 1, worst, None, 1e-4)
    dp, bf = optimize(prob), brute_force(prob)
    _same(dp, bf, prob)
    assert dp.config == bf.config or dp.epoch_time_s == pytest.approx(bf.epoch_time_s, rel=1e-12)


def test_read_times_bracket_the_simulator():
    """A PS configuration simulated: N_mr single-worker replicas pulling the whole model each
    step from one server. The simulator's pull time lies between Eq. 11 and Eq. 10."""
    coarse = "size=40MB,fwd=1ms,bwd=1ms,batch=32"
    for n_mr, mode in ((1, "async"), (4, "async"), (4, "sync")):
        pt = sgdsim.predict(coarse=coarse, workers=n_mr, bandwidth="1Gbps", mode=mode,
                            sharing="ps", steps=20, replications=1)[0]
        pull_s = (pt.step_time_s - 2e-3) / 2  # pull and push take as long; compute is 2 ms
        layers = synthetic([(1, 1, 40e6, False)])
        lo, hi = read_times_s(layers, Config(1, n_mr, 1, (1,), (1,), (1,)), Network(1e9))
        assert lo * (1 - 1e-6) <= pull_s <= hi * (1 + 1e-6), (n_mr, mode, lo, pull_s, hi)
    assert lo < hi


def test_bundled_layers_match_published_sizes():
    """Multiply-adds per sample (published: ResNet-50 4.1 G, VGG-16 15.5 G at 224x224) and
    weights (data/layer_params/summary.csv, from the architecture definitions)."""
    totals = {r["model"]: float(r["fp32_MB(1e6 B)"]) * 1e6 for r in
              csv.DictReader(open("src/sgdsim/data/layer_params/summary.csv"))}
    for model, gmacs in (("resnet50", 4.1), ("vgg16", 15.5)):
        layers, batch = load_layers(model)
        assert sum(x.connections for x in layers) / 1e9 == pytest.approx(gmacs, rel=0.05)
        assert sum(x.weight_bytes for x in layers) == pytest.approx(totals[model], rel=1e-3)
    layers, batch = load_layers("resnet50")
    assert batch == 128 and len(layers) == 54  # 53 convolutions and the classifier
    assert [x.local for x in layers][-1] is False and all(x.local for x in layers[:-1])


def test_constants_measure_save_and_load(tmp_path):
    c = measure_constants(np.random.default_rng(0), max_threads=2, repeat=2,
                          sizes=((16, 32), (32, 64)))
    assert c.muladd_s > 0 and c.act_s > 0 and c.err_s > 0 and c.interference[0] == 1.0
    path = tmp_path / "c.json"
    save_constants(c, str(path))
    assert load_constants(str(path)) == c
    data = json.loads(path.read_text())
    for bad, msg in (({**data, "muladd_s": float("nan")}, "muladd_s"), ({**data, "format": "x"}, "format"),
                     ({k: v for k, v in data.items() if k != "err_s"}, "err_s"),
                     ({**data, "interference": [1.0, -2]}, "interference")):
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=msg):
            load_constants(str(path))


def test_optimize_cli(capsys):
    assert main(["optimize", "alexnet", "--machines", "8", "--cores", "2", "--format", "json",
                 "--bandwidth", "1Gbps", "--latency", "100us", "--max-layer-replicas", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_ps"] + d["n_mr"] * d["n_wr"] <= 8 and len(d["layers"]) == 8
    assert d["read_min_s"] <= d["read_max_s"] and math.isfinite(d["epoch_time_s"])
    assert all(x["P"] * x["R"] <= d["n_wr"] and x["H"] <= 2 and x["R"] == 1 for x in d["layers"])
    assert main(["optimize", "resnet50", "--machines", "4", "--cores", "2"]) == 0
    assert "Best:" in capsys.readouterr().out


@pytest.mark.parametrize("args, msg", [
    (["nosuchnet", "--machines", "4", "--cores", "2"], "unknown model 'nosuchnet'"),
    (["alexnet", "--machines", "1", "--cores", "2"], "--machines must be from 2"),
    (["alexnet", "--machines", "4", "--cores", "0"], "--cores must be from 1 to 256"),
    (["alexnet", "--machines", "99999999999999999999", "--cores", "2"], "--machines must be from 2"),
    (["alexnet", "--machines", "4", "--cores", "2", "--read-every", "0"], "--read-every"),
    (["alexnet", "--machines", "4", "--cores", "2", "--bandwidth", "fast"], "bandwidth"),
    (["alexnet", "--machines", "4", "--cores", "2", "--constants", "/nonexistent.json"], "cannot read"),
    (["alexnet", "--machines", "4", "--cores", "2", "--max-layer-replicas", "0"], "--max-layer-replicas"),
])
def test_optimize_bad_input_is_one_line(capsys, args, msg):
    assert main(["optimize", *args]) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1


def test_a_layers_file_needs_its_batch_size(tmp_path, capsys):
    path = tmp_path / "net.csv"
    path.write_text('order,node,op,forward_ms,backward_ms,activation_bytes,parameter_bytes\n'
                    '0,n1,"Linear(in_features=4, out_features=2, bias=True)",1,1,64,40\n')
    assert main(["optimize", str(path), "--machines", "3", "--cores", "1"]) == 2
    assert "--batch-size" in capsys.readouterr().err
    assert main(["optimize", str(path), "--machines", "3", "--cores", "1", "--batch-size", "8"]) == 0
    path.write_text("order,op\n0,Linear\n")
    assert main(["optimize", str(path), "--machines", "3", "--cores", "1", "--batch-size", "8"]) == 2
