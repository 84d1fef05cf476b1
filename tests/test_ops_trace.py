"""The operator types, the meta-device trace and the differential timer (sgdsim.ops)."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from estimator_support import EmptyDB  # noqa: E402
from sgdsim.ops.estimate import estimate_profile  # noqa: E402
from sgdsim.ops.graph import layer_times, trace_model  # noqa: E402
from sgdsim.ops.measure import Precision, _differential, _direction, time_call  # noqa: E402
from sgdsim.ops.optypes import REGISTRY, SAMPLED, classify  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402
from sgdsim.profiler.api import profile_model  # noqa: E402


class ConstantDB:
    """Every call is an exact hit taking ``fwd_s`` forward, twice that backward."""

    def __init__(self, fwd_s=1e-3):
        self.fwd_s = fwd_s

    def lookup(self, device, keys):
        return {k: OpRecord(Device(device, "cpu"), k[0], json.loads(k[1]), k[2], self.fwd_s,
                            2 * self.fwd_s) for k in keys}

    def load(self, **_):
        return []

    def load_estimators(self, device):
        return {}

    def load_steps(self, device=None, dtype=None):
        return []


@pytest.mark.parametrize("seed", range(5))
def test_building_a_call_from_parameters_reads_back_the_same_parameters(seed):
    rng = np.random.default_rng(seed)
    for name in SAMPLED:
        params = REGISTRY[name].sample(rng)
        assert classify(REGISTRY[name].build(params, "float32")) == (name, params), name


@pytest.mark.parametrize("spec", ["zoo:mlp", "zoo:small-cnn", "zoo:small-resnet"])
def test_the_meta_trace_builds_the_structure_sgdsim_profile_measures(spec):
    real = profile_model(spec, 4, steps=1, warmup=0).profile
    est = estimate_profile(spec, 4, ConstantDB(), "test-device")
    assert [o.id for o in est.ops] == [o.id for o in real.ops]
    assert [o.deps for o in est.ops] == [o.deps for o in real.ops]
    assert [o.size_bytes for o in est.ops] == [o.size_bytes for o in real.ops]
    calls = est.extra["estimated"]["calls"]
    assert est.mean_compute_s() == pytest.approx(calls * 3e-3)  # fwd 1 ms + bwd 2 ms per call


def test_mlp_calls_carry_the_layer_shapes():
    step = trace_model("zoo:mlp?width=64&depth=3&inputs=20&classes=5", 8)
    mats = [p for name, p in step.keyed() if name == "addmm"]
    assert [(p["m"], p["k"], p["n"]) for p in mats] == [(8, 20, 64), (8, 64, 64), (8, 64, 5)]
    assert [p["ga"] for p in mats] == [0, 1, 1]  # the input needs no gradient, activations do
    assert [name for name, _ in step.keyed()].count("relu") == 2


def test_each_call_is_charged_to_exactly_one_layer_and_nothing_is_lost():
    step = trace_model("zoo:small-resnet", 2)
    n = len(step.calls)
    rng = np.random.default_rng(0)
    durations = rng.uniform(0, 1, n)
    assert sum(layer_times(step, list(durations))) == pytest.approx(durations.sum())
    modules = [step.rec.modules[m][1] for m, _ in step.rec.keys]
    for i in rng.choice(n, 10, replace=False):
        one_hot = [0.0] * n
        one_hot[i] = 1.0
        charged = layer_times(step, one_hot)
        assert sorted(charged)[-1] == 1.0 and sum(charged) == 1.0
        if classify(step.calls[i])[0] == "conv2d":  # a convolution is its conv layer's work
            assert isinstance(modules[int(np.argmax(charged))], torch.nn.Conv2d)


def test_the_differential_cancels_what_a_run_costs_once():
    per_copy, fixed = 3e-6, 5e-3
    samples = _differential(lambda k: fixed + k * per_copy, 40, 3)
    assert samples.per_copy == pytest.approx([per_copy] * 3, rel=1e-9)
    assert samples.bounds == pytest.approx([fixed / 20 + per_copy] * 3, rel=1e-9)  # M = 20 copies
    assert samples.value() == (pytest.approx(per_copy, rel=1e-9), False)


def test_a_time_the_timer_cannot_resolve_is_stored_as_its_bound_never_zero():
    """Runs of N and M copies that differ only by noise: the per-copy median is <= 0 or
    smaller than its spread, so the record keeps the M-copy run over M, flagged."""
    rng = np.random.default_rng(0)
    samples = _differential(lambda k: 1e-3 + 5e-5 * rng.standard_normal(), 40, 7)
    value, bound = samples.value()
    assert bound and value > 0 and value == pytest.approx(np.median(samples.bounds))
    assert all(b >= v for b, v in zip(samples.bounds, samples.per_copy))


def test_more_pairs_run_until_the_median_is_known_to_the_stated_precision():
    from sgdsim.ops.measure import Precision
    rng = np.random.default_rng(1)
    per_copy, fixed = 1e-5, 1e-3

    def timed(k):
        return fixed + k * per_copy * (1 + 0.2 * rng.standard_normal())

    few = _differential(timed, 100, 5)
    assert len(few.per_copy) == 5
    precise = _differential(timed, 100, 5, Precision(rel=0.05, max_repeats=1000))
    q1, q3 = np.percentile(precise.per_copy, [25, 75])
    sem = 1.2533 * (q3 - q1) / 1.349 / np.sqrt(len(precise.per_copy)) / np.median(precise.per_copy)
    assert 20 < len(precise.per_copy) < 1000 and sem <= 0.05
    assert np.median(precise.per_copy) == pytest.approx(per_copy, rel=0.15)
    capped = _differential(timed, 100, 5, Precision(rel=1e-6, max_repeats=12))
    assert len(capped.per_copy) == 12


def test_no_pair_beyond_the_minimum_starts_once_a_direction_has_run_its_time():
    from sgdsim.ops.measure import Precision
    rng = np.random.default_rng(2)
    now, runs = [0.0], []

    def timed(k):  # a noisy call on a clock that advances by what it times
        t = 1e-3 + k * 2e-3 * (1 + 0.3 * rng.standard_normal())
        now[0] += t
        runs.append(t)
        return t

    out = _differential(timed, 4, 5, Precision(rel=1e-6, max_repeats=1000, max_s=0.2),
                        clock=lambda: now[0])
    last_pair = runs[-1] + runs[-2]
    assert len(out.per_copy) > 5 and now[0] - last_pair < 0.2 <= now[0]
    runs.clear()
    floor = _differential(timed, 4, 5, Precision(rel=1e-6, max_repeats=1000, max_s=0.0))
    assert len(floor.per_copy) == 5 and len(runs) == 2 + 2 * 5  # the minimum, whatever the time


def test_a_call_that_lasts_the_target_alone_runs_two_copies_against_one():
    from sgdsim.ops.measure import TARGET_RUN_S, _copies

    assert _copies(3 * TARGET_RUN_S, _Runner()) == 2
    assert _copies(TARGET_RUN_S / 50, _Runner()) == 50
    samples = _differential(lambda k: 4e-3 + k * 0.03, 2, 3)  # M = 1: the fixed cost cancels
    assert samples.per_copy == pytest.approx([0.03] * 3, rel=1e-9)


class _Runner:
    bytes_per_copy = 4


@pytest.mark.parametrize("per_copy,fixed", [(3e-6, 20e-6), (1e-3, 20e-6), (5e-3, 20e-6),
                                            (1.5e-3, 0.6e-3)])
def test_the_hybrid_times_a_long_call_alone_and_a_short_one_differentially(per_copy, fixed):
    calls = []

    def timed(k):
        calls.append(k)
        return fixed + k * per_copy

    samples, n = _direction(timed, _Runner(), 3, 0.002, Precision())
    if fixed + per_copy >= 0.002:  # the pilot: one call, fixed cost included
        assert n == 1 and set(calls) == {1} and samples.per_copy == pytest.approx([fixed + per_copy] * 3)
    else:
        assert n > 1 and samples.per_copy == pytest.approx([per_copy] * 3, rel=1e-9)
    always, n_always = _direction(timed, _Runner(), 3, float("inf"), Precision())
    assert n_always > 1 and always.per_copy == pytest.approx([per_copy] * 3, rel=1e-9)


def test_a_bigger_operator_times_longer_and_inplace_calls_replay():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    small = time_call(REGISTRY["relu"].build({"numel": 2 ** 12, "gi": 1}, "float32"), rng)
    large = time_call(REGISTRY["relu"].build({"numel": 2 ** 21, "gi": 1}, "float32"), rng)
    assert 0 < small.fwd_s < large.fwd_s and 0 < small.bwd_s < large.bwd_s
    step = trace_model("zoo:small-resnet", 2)
    inplace = next(c for c in step.calls if c.func == "aten.relu_.default")
    timing = time_call(inplace, rng, repeats=2)
    assert timing.fwd_s > 0 and timing.bwd_s > 0


def test_the_conv_grid_samples_what_models_use():
    from sgdsim.ops.optypes.conv import macs

    rng = np.random.default_rng(3)
    draws = [REGISTRY["conv2d"].sample(rng) for _ in range(400)]
    inner = [d["cout"] for d in draws] + [d["cin"] for d in draws if d["cin"] != 3]
    aligned = sum(c % 16 == 0 for c in inner) / len(inner)
    assert 0.7 < aligned < 0.95  # mostly models' multiples of 16, some odd counts on purpose
    patches = [d for d in draws if d["kh"] == d["sh"] > 1]
    assert 20 <= len(patches) <= 60 and all(d["h"] % d["kh"] == 0 and d["ph"] == 0
                                            for d in patches)
    assert all(macs(d) <= 4e8 for d in draws)  # every point stays quick to time
    assert all((d["h"] + 2 * d["ph"] - d["kh"]) // d["sh"] + 1 >= 1 for d in draws)


def test_estimates_for_values_the_estimator_never_saw_are_flagged():
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.estimator.model import train

    rng, mm = np.random.default_rng(0), REGISTRY["mm"]
    records = []
    while len(records) < 40:  # the training sees only mm calls whose A needs a gradient
        p = mm.sample(rng)
        if p["ga"] == 1:
            t = 1e-9 * p["m"] * p["k"] * p["n"] + 5e-6
            records.append(OpRecord(Device("dev", "cpu"), "mm", p, "float32", t, 2 * t))
    est = {("mm", "float32"): train(records, mm.shape_dims, np.random.default_rng(1), 2.0)}
    seen = dict(records[0].params)
    calls = [mm.build(seen, "float32"), mm.build(dict(seen, ga=0), "float32")]
    timed = time_calls(calls, EmptyDB(), "dev", est)
    assert timed.source == ["estimated", "estimated"] and timed.unseen == {"mm": ["ga=0"]}
    assert time_calls(calls[:1], EmptyDB(), "dev", est).unseen == {}
    top = max(r.params["m"] for r in records)  # and a size beyond the largest trained
    big = time_calls([mm.build(dict(seen, m=4 * top), "float32")], EmptyDB(), "dev", est)
    assert big.unseen == {"mm": [f"m={4 * top} (trained up to {top})"]}


def test_an_ensemble_estimator_times_calls_as_a_single_one_does():
    """A searched type trained with several members is an ``Ensemble``, which has no terms
    prior: timing calls with one names only what its layout never saw (replay_steps.py on
    run 19, members 3, stopped at this before it was asked for)."""
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.estimator.ensemble import Ensemble, train_members

    rng, mm = np.random.default_rng(0), REGISTRY["mm"]
    records = []
    for _ in range(40):
        p = mm.sample(rng)
        t = 1e-9 * p["m"] * p["k"] * p["n"] + 5e-6
        records.append(OpRecord(Device("dev", "cpu"), "mm", p, "float32", t, 2 * t))
    est = train_members(records, mm.shape_dims, np.random.default_rng(1), 2.0, members=2)
    assert isinstance(est, Ensemble)
    calls = [mm.build(records[0].params, "float32")]
    timed = time_calls(calls, EmptyDB(), "dev", {("mm", "float32"): est})
    assert timed.source == ["estimated"] and timed.unseen == {} and timed.fwd[0] > 0


def test_an_ensemble_over_a_terms_prior_names_the_calls_that_rest_on_unfitted_terms():
    """Members trained with the physical terms as their prior (``--prior on --members 3``)
    share it, and timing calls says, as for one estimator, which calls have a term too few
    rows had for a rate: here the saved target of an in-place product no row had."""
    from estimator_support import EmptyDB
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.estimator.ensemble import Ensemble, train_members
    from sgdsim.ops.optypes.pointwise import SAVES_TARGET
    from test_estimator_terms import eltwise_rows

    rows = [r for r in eltwise_rows(150, np.random.default_rng(0))
            if not (r.params["fn"] in SAVES_TARGET and r.params["inplace"] and r.params["gi"])]
    est = train_members(rows, REGISTRY["eltwise"].shape_dims, np.random.default_rng(1), 2.0,
                        members=2, use_prior=True)
    assert isinstance(est, Ensemble) and est.prior == est.members[1].prior
    mul_ = REGISTRY["eltwise"].build({"fn": "mul", "numel": 4096, "bcast": 0, "gi": 1, "inplace": 1},
                                     "float32")
    timed = time_calls([mul_], EmptyDB(), "dev", {("eltwise", "float32"): est})
    assert timed.unseen["eltwise"][0] == "1 call(s) with a term too few grid rows had for a rate"


def test_the_matmul_grid_samples_what_models_use():
    """Widths mostly multiples of 16 and rows of 8, as models' layers are (the BLAS runs them
    faster); some odd ones on purpose; every point still quick to time."""
    rng = np.random.default_rng(5)
    for name in ("addmm", "mm", "bmm"):
        draws = [REGISTRY[name].sample(rng) for _ in range(400)]
        widths = [d[k] for d in draws for k in ("k", "n") if d[k] >= 16]
        rows = [d["m"] for d in draws if d["m"] >= 8]
        assert 0.7 < sum(w % 16 == 0 for w in widths) / len(widths) < 0.95, name
        assert 0.7 < sum(m % 8 == 0 for m in rows) / len(rows) < 0.95, name
        assert min(d["m"] for d in draws) < 8 and min(d["k"] for d in draws) >= 8, name
        macs = [d["m"] * d["k"] * d["n"] * d.get("b", 1) for d in draws]
        vocab = [d for d in draws if d["n"] > 8192]  # a language model's output layer
        assert all(m <= 3e8 for m, d in zip(macs, draws) if d["n"] <= 8192), name
        assert all(m <= 1e10 for m in macs), name
        if name == "bmm":
            assert not vocab
        else:  # GPT-2's head: 768 -> 50,257; a share of the draws, not most
            assert 0.04 < len(vocab) / len(draws) < 0.2 and max(d["n"] for d in vocab) > 40000
            # a language model's head over a batch of positions, as GPT-2's at 4 x 64
            assert any(d["m"] >= 128 and d["k"] >= 512 for d in vocab), name


def test_the_embedding_grid_holds_vocabulary_sized_tables():
    """GPT-2's table (39 M weights) and BERT's (23 M): a drawn rows x width seldom reaches
    them, and their dense gradient runs at several times the small tables' cost per element."""
    rng = np.random.default_rng(7)
    draws = [REGISTRY["embedding"].sample(rng) for _ in range(400)]
    large = [d for d in draws if d["num"] * d["dim"] >= 20e6]
    assert 0.05 < len(large) / len(draws) < 0.3
    assert max(d["num"] * d["dim"] for d in draws) > 38.6e6
    assert all(d["num"] <= 65536 and d["dim"] <= 1600 for d in draws)


def test_the_eltwise_grid_reaches_a_language_models_tables():
    """The optimizer's add over GPT-2's table (38.6 M elements) and BERT's (23.4 M): a share of
    the draws, the rest below 8 M elements as before."""
    rng = np.random.default_rng(11)
    draws = [REGISTRY["eltwise"].sample(rng) for _ in range(600)]
    large = [d for d in draws if d["numel"] > 2 ** 23]
    assert 0.05 < len(large) / len(draws) < 0.15
    assert max(d["numel"] for d in large) > 38.6e6 and max(d["numel"] for d in draws) <= 2 ** 26
    assert {d["fn"] for d in large} >= {"add", "clone"}


def test_a_types_grid_does_not_depend_on_the_other_types_asked_for():
    """``--grid conv2d`` and ``--grid all`` draw the same conv2d rows; the order of --grid too."""
    from sgdsim.ops.collect import grid_calls

    def rows(types, op):
        return [p for name, p, _ in grid_calls(types, 6, 3) if name == op]
    assert rows(["eltwise"], "eltwise") == rows(["relu", "conv2d", "eltwise"], "eltwise")
    assert rows(["conv2d", "relu"], "relu") == rows(["relu"], "relu")
    assert rows(["relu"], "relu") != [p for name, p, _ in grid_calls(["relu"], 6, 4)]


def test_in_place_arithmetic_is_its_own_parameter_and_replays_in_place():
    """The optimizer's add_ and a residual += read as inplace 1 and are built (and so timed) in
    place; a row stored before the parameter reads as out of place; a share of the grid's
    draws of the functions that have an in-place variant are in place."""
    from sgdsim.ops.optypes import complete
    from sgdsim.ops.optypes.pointwise import INPLACE_FNS, MASKS, UPDATE_SHARE
    from sgdsim.ops.template import Call, TSpec

    eltwise = REGISTRY["eltwise"]
    a = b = TSpec((4, 8), (8, 1), "float32", False)
    op, p = classify(Call("aten.add_.Tensor", (a, b)))
    assert op == "eltwise" and p["fn"] == "add" and p["inplace"] == 1
    assert classify(Call("aten.add.Tensor", (a, b)))[1]["inplace"] == 0
    assert eltwise.build(p, "float32").func == "aten.add_.Tensor"
    assert eltwise.build({**p, "fn": "mul_scalar"}, "float32").func == "aten.mul_.Scalar"
    assert eltwise.build({**p, "fn": "tanh"}, "float32").func == "aten.tanh.default"
    assert complete("eltwise", {k: v for k, v in p.items() if k != "inplace"})["inplace"] == 0
    rng = np.random.default_rng(13)
    draws = [eltwise.sample(rng) for _ in range(800)]
    has = [d for d in draws if d["fn"] in INPLACE_FNS and d["fn"] != "add"]  # add: the updates too
    assert all(d["inplace"] == 0 for d in draws if d["fn"] not in INPLACE_FNS + MASKS)
    assert 0.2 < sum(d["inplace"] for d in has) / len(has) < 0.4
    updates = [d for d in draws if d["fn"] == "add" and d["inplace"] and not d["gi"] and not d["bcast"]]
    assert UPDATE_SHARE * 0.8 < len(updates) / len(draws) < UPDATE_SHARE * 1.3 + 0.02
    masks = [d for d in draws if d["fn"] in MASKS]
    assert masks and all(d["inplace"] == 1 and d["gi"] == 0 for d in masks)


def test_dropout_mask_is_drawn_as_a_model_calls_it():
    """Dropout's ``bernoulli_`` reads as the grid draws it (in place, no gradient), replays as
    the same aten call, and has a per-element term of its own: before it was drawn it had
    none, and the models' masks were estimated at the type's floor."""
    from sgdsim.ops.optypes.pointwise import ARITH_NAMES, MASKS, arith_terms
    from sgdsim.ops.template import Call, TSpec

    x = TSpec((4, 64, 768), (49152, 768, 1), "float32", False)
    op, p = classify(Call("aten.bernoulli_.float", (x, 0.9)))
    assert op == "eltwise" and p == {"fn": "bernoulli_", "numel": 4 * 64 * 768, "bcast": 0, "gi": 0,
                                     "inplace": 1}
    assert p["fn"] in MASKS
    assert REGISTRY["eltwise"].build(p, "float32").func == "aten.bernoulli_.float"
    terms = arith_terms(p, "float32", 2.0 ** 20)
    per_fn = terms[3:3 + len(ARITH_NAMES)]
    assert per_fn == [p["numel"] * (f == "bernoulli_") for f in ARITH_NAMES]
