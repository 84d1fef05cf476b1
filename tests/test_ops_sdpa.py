"""Attention's dropout and mask kind as parameters, and rows stored before they were read."""
from __future__ import annotations

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")

from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.exchange import export_records, import_records  # noqa: E402
from sgdsim.ops.measure import Runner  # noqa: E402
from sgdsim.ops.optypes import REGISTRY, classify, complete  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402

SDPA = REGISTRY["sdpa"]
SHAPE = {"b": 4, "heads": 12, "lq": 64, "lk": 64, "d": 64, "gi": 1}


@pytest.mark.parametrize("causal,mask,dropout", [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 1),
                                                  (0, 2, 0), (0, 1, 1)])
def test_every_kind_of_attention_call_reads_back_as_built(causal, mask, dropout):
    params = {**SHAPE, "causal": causal, "mask": mask, "dropout": dropout}
    call = SDPA.build(params, "float32")
    assert classify(call) == ("sdpa", params)
    kwargs = dict(call.kwargs)
    assert ("dropout_p" in kwargs) == bool(dropout)
    if mask:
        assert kwargs["attn_mask"].dtype == ("bool" if mask == 2 else "float32")


def test_gpt2s_attention_is_read_with_its_dropout_and_boolean_mask():
    pytest.importorskip("transformers")
    from sgdsim.ops.collect import model_calls

    options = "n_layer=1&n_embd=16&n_head=2&vocab_size=50&n_positions=16&seq_len=8"
    found = [p for name, p, _ in model_calls(f"zoo:gpt2?{options}", 2) if name == "sdpa"]
    assert found == [{"b": 2, "heads": 2, "lq": 8, "lk": 8, "d": 8, "causal": 0, "mask": 2,
                      "dropout": 1, "gi": 1}]


def _forward_s(params) -> float:
    runner = Runner(SDPA.build(params, "float32"), np.random.default_rng(0), "cpu")
    sets = runner.fresh(1)
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        runner.forward(sets)
        best = min(best, time.perf_counter() - t0)
    return best


def test_dropout_inside_attention_costs_what_the_parameter_is_for():
    """The reason ``dropout`` is a parameter: on a CPU it takes the call off the fused kernel
    (4-5x at this shape here); a grid without it could not know."""
    torch.set_num_threads(1)
    plain = _forward_s({**SHAPE, "causal": 0, "mask": 0, "dropout": 0})
    dropped = _forward_s({**SHAPE, "causal": 0, "mask": 0, "dropout": 1})
    assert dropped > 1.5 * plain


def test_rows_stored_before_dropout_was_read_load_as_without_it(tmp_path):
    old = {**SHAPE, "causal": 0, "mask": 1}
    assert complete("sdpa", old) == {**old, "dropout": 0}
    assert complete("sdpa", {**old, "dropout": 1})["dropout"] == 1
    assert complete("relu", {"numel": 5, "gi": 1}) == {"numel": 5, "gi": 1}

    dev = Device("cpu (1 threads, test)", "cpu")
    csv_path = tmp_path / "old.csv"
    export_records([OpRecord(dev, "sdpa", old, "float32", 1e-3, 2e-3)], str(csv_path))
    (row,) = import_records(str(csv_path))
    assert row.params == {**old, "dropout": 0}

    db = open_db(str(tmp_path / "ops.sqlite"))
    db.upsert([OpRecord(dev, "sdpa", old, "float32", 1e-3, 2e-3)])  # as an older sgdsim did
    (loaded,) = db.load(op="sdpa")
    assert loaded.params == {**old, "dropout": 0}
