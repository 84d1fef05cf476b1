"""Operators in every precision: a call converted to bfloat16 keeps its integer tensors, and
``ops measure --dtype`` stores bfloat16 rows for grids and for a model's calls."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("sqlalchemy")

from sgdsim.cli import main  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.template import Call, TSpec, _Named  # noqa: E402


def test_a_call_in_another_dtype_converts_floats_only():
    call = Call("aten.embedding.default", (TSpec.dense((100, 8), "float32", True), TSpec.dense((4,), "int64")),
                (("dtype", _Named("torch.float32")), ("mask", TSpec.dense((4,), "bool"))))
    half = call.in_dtype("bfloat16")
    assert [t.dtype for t in half.tensors()] == ["bfloat16", "int64", "bool"]
    assert half.tensors()[0].requires_grad and dict(half.kwargs)["dtype"] == _Named("torch.bfloat16")
    assert half.in_dtype("float32") == call


def test_measure_stores_bfloat16_rows_for_a_grid_and_a_model(tmp_path):
    db = str(tmp_path / "ops.sqlite")
    assert main(["ops", "measure", "--grid", "relu,mm", "--samples", "2", "--repeats", "2", "--precision", "0",
                 "--dtype", "bfloat16", "--db", db, "--quiet"]) == 0
    assert main(["ops", "measure", "--model", "zoo:mlp?width=16&depth=1&inputs=8&classes=2", "--batch-size", "4",
                 "--repeats", "2", "--precision", "0", "--dtype", "bfloat16", "--db", db, "--quiet"]) == 0
    with open_db(db, create=False) as handle:
        rows = handle.load()
    assert {r.dtype for r in rows} == {"bfloat16"} and {"relu", "mm", "addmm"} <= {r.op for r in rows}
    assert all(r.fwd_s > 0 for r in rows)


def test_a_profile_estimated_in_bfloat16_uses_bfloat16_rows_and_says_so(tmp_path, capsys):
    from sgdsim.profile.io import load_profile
    model = "zoo:mlp?width=16&depth=1&inputs=8&classes=2"
    db = str(tmp_path / "ops.sqlite")
    assert main(["ops", "measure", "--model", model, "--batch-size", "4", "--repeats", "2", "--precision", "0",
                 "--dtype", "bfloat16", "--db", db, "--quiet"]) == 0
    half, single = tmp_path / "half.json", tmp_path / "single.json"
    assert main(["profile", model, "--batch-size", "4", "--estimate", "--db", db, "--dtype", "bfloat16",
                 "-o", str(half)]) == 0
    prof = load_profile(str(half))
    info = prof.extra["estimated"]
    assert info["dtype"] == "bfloat16" and info["time_fraction_measured"] == 1.0
    err = capsys.readouterr().err
    assert "in bfloat16" in err
    # what the network carries is said, not left to be guessed: float32 parameters (depth 1 is
    # one Linear(8, 2): 8x2 + 2 = 18 of them, 72 bytes), as mixed precision keeps them
    assert prof.model_bytes() == 4 * (8 * 2 + 2)
    assert "parameters and gradients as float32 (0.00 MB of gradients a step)" in " ".join(err.split())
    # the same model in float32: none of these rows apply; the roofline, and what to measure
    assert main(["profile", model, "--batch-size", "4", "--estimate", "--db", db, "-o", str(single)]) == 0
    info = load_profile(str(single)).extra["estimated"]
    assert info["dtype"] == "float32" and info["time_fraction_measured"] == 0.0
    # typed calls from the roofline; untyped ones (views, copies) from the fallback's medians
    assert info["time_fraction_roofline"] + info["time_fraction_fallback"] == pytest.approx(1.0)
    assert info["time_fraction_roofline"] > 0.5 and "neither measured nor estimated" in capsys.readouterr().err
