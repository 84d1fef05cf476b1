"""A measured block of a large model (``sgdsim profile gpt:...``, ``predict --block-profile``):
the step composed from it by hand, a real block timed with PyTorch, and one-line refusals."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from sgdsim.errors import ConfigError
from sgdsim.llm import device, parse_gpt, parse_layout, predict_step
from sgdsim.llm.block_profile import BlockTimes, load_block, save_block
from sgdsim.llm.step import after_flush_s, op_s, output_ops

from test_cli import assert_one_line_error, cli

SMALL = "gpt:layers=4,hidden=256,heads=4,seq=128,vocab=1000"


def block(model, tp=1, mb=1, precision="fp32", fwd=1.0, bwd=2.5, core=0.25) -> BlockTimes:
    shape = {k: v for k, v in asdict(model).items() if k != "name"}
    return BlockTimes(model=shape, tp=tp, mb=mb, precision=precision, device="test", forward_s=fwd,
                      backward_s=bwd, core_forward_s=core, repeats=3, spread=0.0)


@pytest.mark.parametrize("recompute,redo", [("none", 0.0), ("selective", 0.25), ("full", 1.0)])
def test_the_step_is_the_measured_block_composed_by_hand(recompute, redo):
    """pp = dp = tp = 1, m micro-batches: m·L·(forward + backward + what is recomputed), plus
    the modelled logits (forward, and twice that backward) and Adam's update."""
    m, dev = parse_gpt(SMALL), device("a100-80gb")
    lay = parse_layout(f"tp=1,pp=1,dp=1,mb=2,batch=6,recompute={recompute},precision=fp32")
    r = predict_step(m, lay, dev, block(m, mb=2))
    logits = sum(op_s(op, dev, dev.peak("fp32")) for op in output_ops(m, 2, 1))
    _, adam = after_flush_s(m, lay, dev)
    assert r.step_s == pytest.approx(3 * (4 * (1.0 + 2.5 + redo) + 3 * logits) + adam, rel=1e-12)


def test_a_real_block_is_timed_with_pytorch_and_predicted_from(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "block.json"
    rc, _, err = cli(capsys, "profile", SMALL, "--layout", "tp=2,mb=1,precision=fp32", "--steps", "3",
                     "--warmup", "1", "-o", out)
    assert rc == 0, err
    times = load_block(str(out))
    assert times.tp == 2 and times.mb == 1 and times.model["hidden"] == 256
    assert 0 < times.core_forward_s <= times.forward_s and times.backward_s > 0
    rc, text, err = cli(capsys, "predict", SMALL, "--workers", "2", "--layout", "tp=2,batch=2,precision=fp32",
                        "--block-profile", out, "--format", "json")
    assert rc == 0, err
    row = json.loads(text)
    # 2 micro-batches of 4 blocks, full recomputation: 2·4·(2·forward + backward) of measured time
    assert row["parts_s"]["compute"] > 8 * (2 * times.forward_s + times.backward_s)
    assert row["block_profile"] == str(out)
    rc, _, err = cli(capsys, "profile", SMALL, "--layout", "tp=2", "-o", out)
    assert_one_line_error(rc, "", err)  # never over a file the user has
    assert "exists" in err


@pytest.mark.parametrize("asked,message", [
    ("gpt:layers=4,hidden=512,heads=4,seq=128,vocab=1000", "hidden=256, not hidden=512"),
    ("gpt:layers=4,hidden=256,heads=4,seq=256,vocab=1000", "seq=128, not seq=256"),
])
def test_a_block_measured_for_another_shape_is_refused(tmp_path, capsys, asked, message):
    path = tmp_path / "b.json"
    save_block(block(parse_gpt(SMALL)), str(path))
    rc, out, err = cli(capsys, "predict", asked, "--workers", "1", "--layout", "batch=1,precision=fp32",
                       "--block-profile", path)
    assert_one_line_error(rc, out, err)
    assert message in err
    with pytest.raises(ConfigError, match="tp=1, not tp=2"):
        predict_step(parse_gpt(SMALL), parse_layout("tp=2,batch=1,precision=fp32"), device(), block(parse_gpt(SMALL)))
    with pytest.raises(ConfigError, match="precision=fp32, not precision=bf16"):
        predict_step(parse_gpt(SMALL), parse_layout("batch=1"), device(), block(parse_gpt(SMALL)))


@pytest.mark.parametrize("content,message", [
    ("not json", "not a readable block profile"),
    ('{"kind": "sgdsim-profile"}', "not a block profile"),
    ('{"kind": "sgdsim-llm-block", "tp": 1}', "without model"),
])
def test_a_bad_block_file_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "b.json"
    path.write_text(content)
    rc, out, err = cli(capsys, "predict", SMALL, "--workers", "1", "--layout", "batch=1", "--block-profile", path)
    assert_one_line_error(rc, out, err)
    assert message in err


def test_negative_seconds_are_refused(tmp_path):
    path = tmp_path / "b.json"
    save_block(block(parse_gpt(SMALL), fwd=-1.0), str(path))
    with pytest.raises(ConfigError, match="must be positive"):
        load_block(str(path))


@pytest.mark.parametrize("argv,message", [
    ([SMALL, "--batch-size", "4"], "--batch-size does not apply to a large model's block"),
    ([SMALL, "--layout", "pp=2"], "profiling a block takes tp=, mb=, precision="),
    (["zoo:mlp"], "--batch-size is required"),
    (["zoo:mlp", "--batch-size", "4", "--layout", "tp=2"], "--layout applies to a large model's block"),
])
def test_profile_options_that_do_not_apply_are_one_line(tmp_path, capsys, argv, message):
    rc, out, err = cli(capsys, "profile", *argv, "-o", tmp_path / "x.json")
    assert_one_line_error(rc, out, err)
    assert message in err
    assert not (tmp_path / "x.json").exists()
