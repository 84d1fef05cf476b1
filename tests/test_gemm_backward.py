"""The matrix products' backward terms describe the products autograd really runs: captured
from PyTorch's dispatcher while a grid point's call (built as the grid builds it) runs its
backward, each captured product's terms summed, against ``gemm_backward_terms``."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.measure import Runner
from sgdsim.ops.optypes.matmul import ADDMM, BMM, MM, gemm_backward_terms, gemm_terms

CACHE_BYTES = 2.0 ** 12  # small: the beyond-cache terms are nonzero and tell operands apart
PRODUCTS = ("aten.mm.default", "aten.bmm.default")


def _product(a, b) -> dict:
    """A captured call's parameters: C = A @ B, B's last two dimensions a transposed view or not.
    A's layout is not read: no term counts it (a weight gradient's dC^T is a transposed view)."""
    batch = {"b": a.shape[0]} if a.dim() == 3 else {}
    tb = int(b.stride(-1) != 1 and b.shape[-1] > 1)
    return {**batch, "m": a.shape[-2], "k": a.shape[-1], "n": b.shape[-1], "tb": tb, "ga": 1}


def _backward_products(op_type, p) -> list[dict]:
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[dict] = []

    class Capture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func) in PRODUCTS:
                seen.append(_product(args[0], args[1]))
            return func(*args, **(kwargs or {}))

    runner = Runner(op_type.build(p, "float32"), np.random.default_rng(0), "cpu")
    out = runner.outputs(runner.fresh(1))[0]
    grad = torch.ones_like(out)
    with Capture():
        out.backward(grad)
    return seen


CASES = [
    (ADDMM, {"m": 6, "k": 21, "n": 37, "tb": 1, "ga": 0}),  # a first linear layer: weight only
    (ADDMM, {"m": 40, "k": 21, "n": 37, "tb": 1, "ga": 1}),
    (MM, {"m": 6, "k": 21, "n": 37, "tb": 1, "ga": 1, "gb": 1}),
    (MM, {"m": 6, "k": 21, "n": 37, "tb": 1, "ga": 0, "gb": 1}),
    (MM, {"m": 6, "k": 21, "n": 37, "tb": 0, "ga": 1, "gb": 1}),
    (MM, {"m": 6, "k": 21, "n": 37, "tb": 0, "ga": 1, "gb": 0}),
    (BMM, {"b": 3, "m": 6, "k": 21, "n": 37, "ga": 1, "gb": 1}),
]


@pytest.mark.parametrize("op_type,p", CASES, ids=lambda x: getattr(x, "name", None) or str(x))
def test_backward_terms_are_those_of_the_products_autograd_runs(op_type, p):
    products = _backward_products(op_type, p)
    assert len(products) == int(p["ga"]) + int(p.get("gb", 1))  # one product per gradient
    ran = [float(sum(col)) for col in zip(*(gemm_terms(q, "float32", CACHE_BYTES) for q in products))]
    assert gemm_backward_terms(p, "float32", CACHE_BYTES) == ran


def test_a_linear_layers_weight_gradient_has_the_layers_inputs_as_its_columns():
    # the partial tile of the output's columns: a layer 21 wide in, 32 out (a multiple of 16)
    # pays it in its backward; 32 in, 37 out does not (its forward does)
    partial = 8  # gemm_terms' index of the partial-tile term
    odd_in = {"m": 64, "k": 21, "n": 32, "tb": 1, "ga": 0}
    odd_out = {"m": 64, "k": 32, "n": 37, "tb": 1, "ga": 0}
    assert gemm_backward_terms(odd_in, "float32", CACHE_BYTES)[partial] > 0
    assert gemm_backward_terms(odd_out, "float32", CACHE_BYTES)[partial] == 0
    assert gemm_terms(odd_out, "float32", CACHE_BYTES)[partial] > 0


def _mm_rows(n: int, rng) -> list:
    """Grid points of mm with times a fit can follow: a fixed cost and one per multiply-add."""
    from sgdsim.ops.records import Device, OpRecord

    rows = []
    for _ in range(n):
        p = MM.sample(rng)
        fwd = 1e-6 + 2e-11 * p["m"] * p["k"] * p["n"]
        rows.append(OpRecord(Device("cpu (test)", "cpu"), "mm", p, "float32", fwd, 2 * fwd, 5, 0.0, 0.0, 1.0))
    return rows


def test_an_estimator_fitted_to_older_terms_is_refused_with_what_to_run():
    import json

    from sgdsim.errors import ConfigError
    from sgdsim.ops.estimator.prior import check_prior, prior_times
    from sgdsim.ops.estimator.terms import fit_terms_prior

    rows = _mm_rows(60, np.random.default_rng(3))
    prior = fit_terms_prior(rows, True)
    assert prior["revision"] == MM.terms_revision == 5  # run 40's transposed B gradient, runs 54-56's terms
    params = [r.params for r in rows[:4]]
    assert prior_times("mm", "float32", params, check_prior(json.loads(json.dumps(prior)), "mm")).shape == (4, 2)
    older = check_prior({k: v for k, v in prior.items() if k != "revision"}, "mm")  # as trained before
    with pytest.raises(ConfigError, match=r"revision 1 of its terms.*revision 5: train it again \(sgdsim ops train\)"):
        prior_times("mm", "float32", params, older)
    for before in (3, 4):  # before run 55's wide outputs, before run 56 moved where they start
        with pytest.raises(ConfigError, match=rf"revision {before} of its terms.*revision 5: train it again"):
            prior_times("mm", "float32", params, check_prior(dict(prior, revision=before), "mm"))
    for bad in (0, True, 2.0, "2"):  # a stored estimator is data from someone else
        with pytest.raises(ValueError, match="revision is a whole number"):
            check_prior(dict(prior, revision=bad), "mm")


def test_a_stale_estimator_met_while_estimating_names_the_database_to_train():
    import dataclasses

    from sgdsim.errors import ConfigError
    from sgdsim.ops.estimate import time_calls
    from sgdsim.ops.estimator.model import terms_alone

    rows = _mm_rows(40, np.random.default_rng(4))
    est = terms_alone(rows, MM.shape_dims, np.random.default_rng(0))
    stale = dataclasses.replace(est, prior={k: v for k, v in est.prior.items() if k != "revision"})

    class Empty:  # a database holding none of the calls, as ``time_calls`` reads one
        shown = "mine.sqlite"

        def lookup(self, device, keys):
            return {}

    calls = [MM.build(r.params, "float32") for r in rows[:3]]
    assert time_calls(calls, Empty(), "cpu (test)", {("mm", "float32"): est}).fwd.shape == (3,)
    with pytest.raises(ConfigError, match=r"revision 1 of its terms.*: train it again: sgdsim ops train --db mine.sqlite$"):
        time_calls(calls, Empty(), "cpu (test)", {("mm", "float32"): stale})
