"""examples/ops/aligned_linears.py: the model `ops measure --model` times for the aligned
products' reading (docs/ops-runs.md): a transformer's (k, n), and the same off the multiples
of 16, one addmm each per step."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "ops"))


def test_the_two_models_differ_only_by_the_shift():
    torch = pytest.importorskip("torch")
    import aligned_linears as al

    (a, (xa, _), loss), (s, (xs, _), _) = al.aligned(4), al.shifted(4)
    dims_a = [(m.in_features, m.out_features) for m in a.layers]
    dims_s = [(m.in_features, m.out_features) for m in s.layers]
    assert dims_a == al.SIZES and all(k % 16 == 0 and n % 16 == 0 for k, n in dims_a)
    assert dims_s == [(k + 5, n + 3) for k, n in al.SIZES] and all(k % 2 and n % 2 for k, n in dims_s)
    assert [x.shape for x in xa] == [torch.Size([4, k]) for k, _ in dims_a]
    assert [x.shape for x in xs] == [torch.Size([4, k]) for k, _ in dims_s]
    out = loss(s(*xs), None)
    out.backward()  # one scalar; every weight gets a gradient, as in the step that is timed
    assert out.dim() == 0 and all(m.weight.grad is not None for m in s.layers)
