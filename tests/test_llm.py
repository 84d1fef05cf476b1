"""Large models (issue 37). Oracles: SC'21's parameter and FLOP formulas, published parameter
counts of Llama-2 7B and Llama-3 8B, the pipeline bubble's closed forms, the collectives'
volumes, and memory counted by hand (Korthikanti et al. 2022, ZeRO)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from sgdsim.errors import ConfigError
from sgdsim.llm import device, load_catalogue, load_transformer, memory, parse_gpt, parse_layout, predict_step
from sgdsim.llm.memory import GiB, stage_params
from sgdsim.llm.pipeline import simulate
from sgdsim.llm.step import dp_s, tp_collective_s, zero_micro_batch_s

SC21 = [  # (layers, hidden, heads), SC'21 Table 1's model shapes, and their parameters in billions
    (24, 2304, 24, 1.7), (30, 3072, 32, 3.6), (36, 4096, 32, 7.5), (40, 6144, 48, 18.4),
    (48, 8192, 64, 39.1), (60, 10240, 80, 76.1), (80, 12288, 96, 145.6), (96, 16384, 128, 310.1),
    (105, 20480, 128, 529.6), (128, 25600, 160, 1008.0)]


def gpt(layers, hidden, heads, seq=2048, vocab=51200):
    return parse_gpt(f"gpt:layers={layers},hidden={hidden},heads={heads},seq={seq},vocab={vocab}")


@pytest.mark.parametrize("layers,hidden,heads,billions", SC21)
def test_gpt_parameters_and_flops_are_sc21_formulas(layers, hidden, heads, billions):
    m, l, h, V, s = gpt(layers, hidden, heads), layers, hidden, 51200, 2048
    closed = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h)) + 2 * h  # + the final LayerNorm
    assert m.params() == pytest.approx(closed, rel=1e-12)
    assert round(m.params() / 1e9, 1) == billions
    B = 512
    assert m.step_flops(B, recompute=True) == pytest.approx(
        96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)), rel=1e-12)
    assert m.step_flops(B, recompute=False) == pytest.approx(
        72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12)


@pytest.mark.parametrize("cfg,params", [
    (dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
          intermediate_size=11008, vocab_size=32000, max_position_embeddings=4096,
          model_type="llama"), 6_738_415_616),  # Llama-2 7B
    (dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
          intermediate_size=14336, vocab_size=128256, max_position_embeddings=8192,
          model_type="llama"), 8_030_261_248),  # Llama-3 8B (grouped-query attention)
])
def test_hugging_face_configs_give_the_published_parameter_counts(tmp_path, cfg, params):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    m = load_transformer(str(path))
    assert m.glu and m.params() == params and m.seq == cfg["max_position_embeddings"]
    assert load_transformer(str(path), seq=2048).seq == 2048


def test_the_bundled_config_is_llama3_8b():
    m = load_transformer("examples/llm/llama3-8b/config.json")
    assert m.params() == 8_030_261_248 and m.kv_heads == 8 and m.glu


def test_gpt2_style_configs_and_mixture_of_experts(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                                    vocab_size=50257, n_inner=None, activation_function="gelu_new")))
    m = load_transformer(str(path))
    assert not m.glu and m.params() == 124_439_808  # GPT-2 small, tied embeddings
    path.write_text(json.dumps(dict(model_type="mixtral", hidden_size=4096, num_hidden_layers=32,
                                    num_attention_heads=32, intermediate_size=14336, vocab_size=32000,
                                    max_position_embeddings=32768, num_local_experts=8)))
    with pytest.raises(ConfigError, match="mixture-of-experts"):
        load_transformer(str(path))


@given(p=st.integers(1, 8), k=st.integers(1, 6), v=st.sampled_from([1, 2, 3, 4]),
       schedule=st.sampled_from(["gpipe", "1f1b", "interleaved"]),
       f=st.floats(0.1, 3.0), b=st.floats(0.1, 3.0))
@settings(max_examples=150, deadline=None)
def test_the_simulated_bubble_is_the_closed_form(p, k, v, schedule, f, b):
    """Uniform stages, free sends: makespan = (m + (p − 1)/v)·(t_f + t_b) per device's work,
    i.e. a bubble of (p − 1)/m (GPipe, 1F1B) or (p − 1)/(m·v) (interleaved)."""
    v = v if schedule == "interleaved" else 1
    m = k * p if schedule == "interleaved" else k
    run = simulate(p, m, schedule, [f / v] * (p * v), [b / v] * (p * v), 0.0, v)
    assert run.makespan_s == pytest.approx((m + (p - 1) / v) * (f + b), rel=1e-9)
    assert run.bubble() == pytest.approx((p - 1) / (m * v), rel=1e-9, abs=1e-12)


def test_sends_add_to_the_critical_path_of_a_one_f_one_b_pipeline():
    """p = 2, m = 1: F0, send, F1, B1, send, B0."""
    run = simulate(2, 1, "1f1b", [1.0, 1.0], [2.0, 2.0], 0.25)
    assert run.makespan_s == pytest.approx(1 + 0.25 + 1 + 2 + 0.25 + 2)


def test_tensor_parallel_volume_and_zero3_traffic():
    dev, m = device("a100-80gb"), gpt(48, 8192, 64)
    for t in (2, 4, 8):
        lay = parse_layout(f"tp={t},pp=1,dp=1,mb=2,batch=2")
        volume = tp_collective_s(m, lay, dev) * dev.intra_Bps
        assert volume == pytest.approx(2 * (t - 1) / t * 2 * 2 * 2048 * 8192, rel=1e-12)
    plain = parse_layout("tp=8,pp=1,dp=16,batch=16")  # one micro-batch per step
    assert dp_s(m, plain, dev, 1e9) * dev.nic_Bps == pytest.approx(2 * 15 / 16 * 2e9, rel=1e-12)
    P = memory(m, plain).weights / 2

    def traffic(zero, batch):  # a step's data-parallel seconds: per micro-batch, then after the flush
        lay = parse_layout(f"tp=8,pp=1,dp=16,batch={batch},zero={zero}")
        gather, scatter = zero_micro_batch_s(m, lay, dev)
        return lay.micro_batches * (2 * gather + scatter) + dp_s(m, lay, dev, P)

    assert traffic(3, 16) / traffic(0, 16) == pytest.approx(1.5, rel=1e-12)  # ZeRO-3: 1.5x plain DP
    assert traffic(1, 16) == traffic(0, 16) and traffic(2, 16) == pytest.approx(traffic(0, 16), rel=1e-12)
    one = 15 / 16 * 2 * P / dev.nic_Bps  # with m micro-batches: 3m one-way collectives, 2m+1 for ZeRO-2
    assert traffic(3, 64) == pytest.approx(3 * 4 * one) and traffic(2, 64) == pytest.approx((4 + 1) * one)
    assert traffic(0, 64) == pytest.approx(2 * one)


def test_memory_counted_by_hand_gpt_1_7b_data_parallel():
    m, lay = gpt(24, 2304, 24), parse_layout("tp=1,pp=1,dp=32,mb=1,batch=512")
    mem = memory(m, lay)
    P = 24 * (12 * 2304 ** 2 + 13 * 2304) + 51200 * 2304 + 2048 * 2304  # blocks, words, positions
    assert mem.weights == 2 * P and mem.gradients == 4 * P and mem.optimizer == 12 * P  # Megatron's 18 B
    # full recomputation keeps each block's input: 2·s·b·h bytes; 1F1B with pp = 1 holds one micro-batch
    assert mem.activations == pytest.approx(24 * 2 * 2048 * 2304 + 2048 * 2304)


def test_memory_counted_by_hand_145b_selective_sequence_parallel_zero1():
    m = gpt(80, 12288, 96)
    lay = parse_layout("tp=8,pp=8,dp=4,mb=1,batch=256,recompute=selective,sp=1,zero=1")
    mem = memory(m, lay)
    P = 80 / 8 * (12 * 12288 ** 2 + 13 * 12288) / 8 + 51200 * 12288 / 8 + 2048 * 12288
    assert mem.weights == pytest.approx(2 * P) and mem.optimizer == pytest.approx(12 * P / 4)
    assert mem.gradients == pytest.approx(4 * P)  # ZeRO-1 (Megatron's distributed optimizer): 6 + 12/d B
    sbh = 2048 * 12288
    # Korthikanti Table 2, TP + SP + selective: 34·sbh/t per layer; 1F1B's first stage holds p
    # micro-batches of its L/p layers
    assert mem.activations == pytest.approx(34 * sbh / 8 * 10 * 8 + sbh / 8)


# Korthikanti et al. 2022 (arXiv:2205.05198), Figure 1: per GPU, parameters with optimizer
# state, and activations, in GiB, without recomputation or sequence parallelism ("none") and
# with both ("seqsel": selective recomputation and sequence parallelism), for its Table 3
# configurations (values as Calculon's validation suite transcribes them). The figure counts
# the transformer blocks only (no embeddings, no embedding dropout mask).
KORTHIKANTI_FIG1 = {  # name: (layers, hidden, heads, tp, pp, batch, mb, v), par_opt, act none, act seqsel
    "22B": ((48, 6144, 64, 8, 1, 4, 4, 1), 45.5625, 59.25, 9.5625),
    "175B": ((96, 12288, 96, 8, 8, 64, 1, 3), 45.5625, 66.84375, 12.3515625),
    "530B": ((105, 20480, 128, 8, 35, 280, 1, 3), 31.640625, 114.0234375, 23.076171875),
    "1T": ((128, 25600, 160, 8, 64, 512, 1, 1), 32.958984375, 131.25, 26.5625),
}


@pytest.mark.parametrize("name", list(KORTHIKANTI_FIG1))
def test_memory_equals_korthikanti_figure_1(name):
    (layers, h, a, tp, pp, batch, mb, v), par_opt, act_none, act_seqsel = KORTHIKANTI_FIG1[name]
    m = gpt(layers, h, a)
    sched = f"schedule={'interleaved' if v > 1 else '1f1b'},v={v}"
    for mode, expected in (("recompute=none", act_none), ("recompute=selective,sp=1", act_seqsel)):
        lay = parse_layout(f"tp={tp},pp={pp},batch={batch},mb={mb},{sched},{mode},precision=fp16")
        mem = memory(m, lay)
        embedding_mask = mb * 2048 * h / tp  # the one term the figure leaves out
        assert (mem.activations - embedding_mask) / GiB == pytest.approx(expected, rel=1e-4)
        states = mem.weights + mem.gradients + mem.optimizer
        embeddings = stage_params(m, lay) - layers / pp * m.layer_params() / tp
        # the figure's blocks count 12h² per layer (no biases or norms): within 0.1 %
        assert (states - 18 * embeddings) / GiB == pytest.approx(par_opt, rel=1e-3)


@pytest.mark.parametrize("layout,model,message", [
    ("tp=5,pp=1,batch=8", (24, 2304, 24), "tp=5 does not divide"),
    ("tp=1,pp=5,batch=8", (24, 2304, 24), "not divisible by pp·v"),
    ("tp=1,pp=2,dp=3,batch=8", (24, 2304, 24), "not divisible by dp·mb"),
    ("tp=1,pp=4,batch=6,schedule=interleaved,v=2", (24, 2304, 24), "multiple of pp=4"),
    ("tp=1,pp=2,batch=8,v=2,schedule=1f1b", (24, 2304, 24), "applies to schedule=interleaved"),
    ("tp=1,pp=8,batch=10000000", (24, 2304, 24), "passes to simulate, above the limit"),
    ("tp=1000,pp=1000,batch=8", (24, 2304, 24), "above the limit of 100,000"),
])
def test_impossible_layouts_are_refused(layout, model, message):
    with pytest.raises(ConfigError, match=message):
        parse_layout(layout).check(gpt(*model))


def test_step_parts_add_up_and_a_layout_that_does_not_fit_says_so():
    dev = device("a100-80gb")
    r = predict_step(gpt(96, 16384, 128), parse_layout("tp=8,pp=16,dp=15,mb=1,batch=2160"), dev)
    assert sum(r.parts_s.values()) == pytest.approx(r.step_s, rel=1e-9)
    assert r.fits and 0 < r.mfu < r.achieved_flops_per_gpu / dev.peak("bf16") < 1
    big = predict_step(gpt(128, 25600, 160), parse_layout("tp=8,pp=8,dp=1,batch=8,recompute=none"), dev)
    assert not big.fits and "GiB of 80.0 GiB on each device" in big.memory.shortfall(dev.hbm_bytes)


def test_the_catalogue_has_sources_and_a_bad_user_file_is_one_line(tmp_path):
    cat = load_catalogue()
    assert {"v100-sxm2-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200"} <= set(cat)
    assert all(d.source.startswith("https://") and d.peak_flops for d in cat.values())
    bad = tmp_path / "d.toml"
    bad.write_text('[x]\nname = "x"\n')
    with pytest.raises(ConfigError, match="lacks"):
        load_catalogue(str(bad))
    fields = dict(cat["a100-80gb"].__dict__)
    fields.update(peak_flops='"fast"', key=None)
    bad.write_text("[x]\n" + "\n".join(f"{k} = {v if k == 'peak_flops' else repr(v)}" for k, v in fields.items()
                                         if k not in ("key", "peak_flops", "source", "name"))
                   + '\npeak_flops = "fast"\nname = "x"\nsource = "s"\n')
    with pytest.raises(ConfigError, match="peak_flops must be a table"):
        load_catalogue(str(bad))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", *args], capture_output=True, text=True)


def test_cli_predicts_a_trillion_parameters_and_refuses_what_does_not_apply():
    one_t = "gpt:layers=128,hidden=25600,heads=160,seq=2048,vocab=51200"
    r = _cli(one_t, "--workers", "3072", "--layout", "tp=8,pp=64,mb=1,batch=3072", "--format", "json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["dp"] == 6 and row["gpus"] == 3072 and row["fits"] and row["tokens_per_s"] > 0
    for args, message in (([one_t, "--layout", "tp=8,pp=64,batch=3072", "--mode", "sync"], "--mode applies"),
                          (["examples/profiles/resnet50.json", "--layout", "tp=2"], "--layout applies"),
                          ([one_t, "--workers", "100", "--layout", "tp=8,pp=64,batch=3072"], "multiple of tp·pp"),
                          ([one_t], "needs --layout"), (["gpt:layers=2", "--layout", "batch=1"], "give hidden="),
                          ([one_t, "--workers", "64", "--layout", "tp=0,batch=64"], "tp must be a positive"),
                          (["gpt:layers=100000,hidden=8,heads=1,seq=8,vocab=8", "--layout", "batch=1"],
                           "layers must be an integer from 1 to 10,000")):
        r = _cli(*args)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for workers in ("abc", "8,16"):  # calibrate reads --workers as predict does
        r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "calibrate", one_t, "--workers", workers,
                            "--layout", "tp=8,pp=64,batch=3072", "--step-time", "90s", "-o", "never.toml"],
                           capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def _small_problem():
    from sgdsim.llm.layout import Layout

    model = gpt(8, 1024, 16, seq=1024, vocab=32000)
    return model, device("a100-40gb"), Layout(batch=32)


def test_the_planner_finds_the_exhaustive_optimum_of_a_small_instance():
    """Closed-form pruning keeps the layout that simulating every layout would pick."""
    from sgdsim.llm.plan import layouts, search

    model, dev, base = _small_problem()
    counts = [8, 16, 32]
    every = [lay for n in counts for lay in layouts(model, n, dev, base, set())]
    simulated = [(predict_step(model, lay, dev), lay) for lay in every]
    fitting = [(r.step_s, lay) for r, lay in simulated if r.fits]
    assert len(every) > 100 and fitting
    for objective, score in (("step-time", lambda s, lay: s), ("cost-per-token", lambda s, lay: s * lay.gpus)):
        result = search(model, dev, counts, base, set(), objective, finalists=5)
        best_lay, best = result.finalists[0]
        assert result.considered == len(every)
        assert score(best.step_s, best_lay) == pytest.approx(min(score(s, lay) for s, lay in fitting), rel=1e-12)


def test_the_planner_keeps_fixed_fields_and_excludes_what_does_not_fit():
    from sgdsim.llm.plan import search

    model, dev, base = _small_problem()
    big = gpt(96, 12288, 96)
    result = search(big, dev, [64, 128], replace_(base, tp=8, batch=256), {"tp"}, finalists=4)
    assert result.too_big > 0 and all(lay.tp == 8 and r.fits for lay, r in result.finalists)


def replace_(lay, **kw):
    from dataclasses import replace

    return replace(lay, **kw)


def test_cli_plan_of_a_large_model_and_its_refusals():
    r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "plan", "gpt:layers=24,hidden=2304,heads=24,seq=2048,"
                        "vocab=51200", "--workers", "16,32", "--layout", "batch=256", "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["finalists"] and out["considered"] >= len(out["finalists"])
    steps = [f["step_time_s"] for f in out["finalists"]]
    assert steps == sorted(steps)
    for args, message in ((["examples/profiles/resnet50.json", "--workers", "1-4"], "--dataset-size"),
                          (["examples/profiles/resnet50.json", "--dataset-size", "1M", "--objective", "step-time"],
                           "--objective applies"),
                          (["gpt:layers=96,hidden=12288,heads=96,seq=2048,vocab=51200", "--workers", "8",
                            "--layout", "batch=64"], "fits in memory"),
                          (["gpt:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200", "--workers", "16"],
                           "--layout batch=N"),
                          (["gpt:layers=24,hidden=2304,heads=24,seq=2048,vocab=51200", "--workers", "16",
                            "--layout", "batch=64", "--finalists", "0"], "--finalists must be from 1")):
        r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "plan", *args], capture_output=True, text=True)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_calibration_recovers_the_efficiency_that_made_a_step(tmp_path):
    from dataclasses import replace

    from sgdsim.llm.calibrate import STEPS, fit_gemm_efficiency, write_catalogue

    model, dev = gpt(40, 6144, 48), device("a100-80gb")
    lay = parse_layout("tp=8,pp=2,dp=4,mb=2,batch=256,schedule=interleaved,v=2")
    for eff in (0.35, 0.62, 0.9):
        step = predict_step(model, lay, replace(dev, gemm_efficiency=eff)).step_s
        assert fit_gemm_efficiency(model, lay, dev, step) == pytest.approx(eff, abs=1e-6)
    with pytest.raises(ConfigError, match="faster than the device's peak"):
        fit_gemm_efficiency(model, lay, dev, 1e-3)
    calls = []
    fit_gemm_efficiency(model, lay, dev, step, progress=lambda: calls.append(1))
    assert len(calls) == STEPS  # a progress bar's total is known before the fit
    path = tmp_path / "mine.toml"
    fitted = replace(dev, gemm_efficiency=0.62)
    write_catalogue(fitted, str(path), "test")
    assert load_catalogue(str(path)) == {dev.key: fitted}
    with pytest.raises(ConfigError, match="exists"):
        write_catalogue(fitted, str(path), "test")


def test_placement_order_decides_which_groups_cross_nodes():
    from sgdsim.llm.step import send_s

    dev, m = device("a100-80gb"), gpt(48, 8192, 64)
    a = parse_layout("tp=2,pp=4,dp=4,batch=64")  # Megatron's tp-dp-pp: a node holds tp x dp
    b = parse_layout("tp=2,pp=4,dp=4,batch=64,order=tp-pp-dp")  # a node holds tp x pp
    assert a.within_node("dp", 8) and not a.within_node("pp", 8)
    assert b.within_node("pp", 8) and not b.within_node("dp", 8)
    act = 2 * 2048 * 8192  # one micro-batch's activations, bytes
    assert send_s(m, a, dev) == pytest.approx(act / 2 / dev.nic_Bps)  # split over the tp NICs
    assert send_s(m, b, dev) == pytest.approx(act / dev.intra_Bps)
    assert dp_s(m, a, dev, 1e9) == pytest.approx(2 * 3 / 4 * 2e9 / dev.intra_Bps)
    assert dp_s(m, b, dev, 1e9) == pytest.approx(2 * 3 / 4 * 2e9 / dev.nic_Bps)


@pytest.mark.parametrize("text", ["gpt:layers=2,hidden=2304,heads=24,seq=2048,vocab=51200",
                                  "llama:layers=2,hidden=4096,heads=32,kv_heads=8,ffn=14336,seq=4096,vocab=128256"])
@pytest.mark.parametrize("tp", [1, 8])
def test_one_block_s_ops_are_the_model_s_flops(text, tp):
    """The op list step.py times holds exactly the block's FLOPs (SC'21: 24·s·h² + 4·s²·h per
    sequence for GPT), split t ways by tensor parallelism."""
    from sgdsim.llm.ops import block_ops

    m = parse_gpt(text)
    ops = block_ops(m, micro_batch=2, tp=tp)
    assert sum(op.flops for op in ops) == pytest.approx(m.layer_flops(2 * m.seq) / tp, rel=1e-12)
    if not m.glu:
        s, h = m.seq, m.hidden
        assert sum(op.flops for op in ops) == pytest.approx(2 * (24 * s * h * h + 4 * s * s * h) / tp, rel=1e-12)
    assert all(op.traffic > 0 for op in ops) and any(op.core for op in ops)


def test_cli_info_shows_a_large_model():
    r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "info",
                        "gpt:layers=96,hidden=12288,heads=96,seq=2048,vocab=51200"], capture_output=True, text=True)
    assert r.returncode == 0 and "parameters 174.62 B" in r.stdout and "QKV projection" in r.stdout, r.stderr


def test_ranks_leaving_a_node_share_its_nics():
    from dataclasses import replace
    from sgdsim.llm.step import send_s
    v100, m = device("v100-sxm2-32gb"), gpt(48, 8192, 64)  # DGX-1V: 4 NICs for 8 GPUs
    assert (v100.nics_per_node, v100.gpus_per_node) == (4, 8)

    def dp_Bps(dev, layout):
        return 2 * 3 / 4 * 2 * 1e9 / dp_s(m, parse_layout(layout), dev, 1e9)  # 4-way DP of 1e9 parameters

    # tp = 8 fills a node: its 8 ranks' DP rings leave it at once, two per NIC
    assert dp_Bps(v100, "tp=8,dp=4,batch=4") == pytest.approx(v100.nic_Bps / 2, rel=1e-12)
    assert dp_Bps(replace(v100, nics_per_node=8), "tp=8,dp=4,batch=4") == pytest.approx(v100.nic_Bps, rel=1e-12)
    # tp = 1, dp = 32: a ring leaves each node once: one flow, one NIC of its own
    one_nic = replace(v100, nics_per_node=1)
    assert dp_s(m, parse_layout("tp=1,dp=32,batch=32"), one_nic, 1e9) == pytest.approx(
        2 * 31 / 32 * 2e9 / v100.nic_Bps, rel=1e-12)
    assert dp_Bps(one_nic, "tp=8,dp=4,batch=4") == pytest.approx(v100.nic_Bps / 8, rel=1e-12)
    # pipeline sends: Megatron's order puts a whole stage (tp·dp = 8 ranks) in a node, all of
    # them sending to the next node at once; tp-pp-dp puts 4 stages of one pipeline in a node,
    # and only the last stage's 2 ranks send out
    act = 2 * 1 * 2048 * 8192 / 2  # bytes each tp rank sends per micro-batch
    across = parse_layout("tp=2,pp=8,dp=4,batch=64")
    assert send_s(m, across, v100) == pytest.approx(act / (v100.nic_Bps / 2), rel=1e-12)
    inner = parse_layout("tp=2,pp=8,dp=4,batch=64,order=tp-pp-dp")
    assert send_s(m, inner, v100) == pytest.approx(act / v100.nic_Bps, rel=1e-12)


def test_a_catalogue_without_nics_per_node_has_one_per_gpu_and_bad_values_are_refused(tmp_path):
    entry = ('[x]\nname = "X"\npeak_flops = { bf16 = 1e15 }\nhbm_Bps = 1e12\nhbm_GiB = 80\nsms = 100\n'
             'intra_Bps = 1e11\nnic_Bps = 1e10\ngpus_per_node = 8\ngemm_efficiency = 0.8\nsource = "s"\n')
    path = tmp_path / "mine.toml"
    path.write_text(entry)
    assert load_catalogue(str(path))["x"].nics_per_node == 8
    for bad in ("0", "2.5", '"two"'):
        path.write_text(entry + f"nics_per_node = {bad}\n")
        with pytest.raises(ConfigError, match="nics_per_node|not a positive number"):
            load_catalogue(str(path))


def test_a_written_catalogue_keeps_the_nics(tmp_path):
    from sgdsim.llm.calibrate import write_catalogue
    path = str(tmp_path / "mine.toml")
    write_catalogue(device("v100-sxm2-32gb"), path, "test")
    assert load_catalogue(path)["v100-sxm2-32gb"] == device("v100-sxm2-32gb")
