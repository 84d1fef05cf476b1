"""A grid draws shapes in proportion to the rates a type's estimator fits (``collect.grid_shapes``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.ops.collect import (MAX_SHAPE_FACTOR, RATES_PER_SAMPLE, SCALED_FROM, grid_calls,
                                grid_shapes)
from sgdsim.ops.optypes import OTHER_NAME, REGISTRY

TYPES = sorted(n for n in REGISTRY if n != OTHER_NAME)


def _terms_of_a_sample(name: str) -> int:
    """The oracle: the width of the type's term matrix, counted from a call of its own."""
    t = REGISTRY[name]
    if t.prior_terms is None:
        return 0
    p = t.sample(np.random.default_rng(7))
    return len(t.prior_terms(p, "float32", 4.0 * 2 ** 20))


@pytest.mark.parametrize("name", TYPES)
def test_rates_are_the_terms_a_row_has(name):
    assert REGISTRY[name].rates() == _terms_of_a_sample(name)


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("samples", [1, 10, SCALED_FROM - 1])
def test_a_small_grid_draws_what_it_asks(name, samples):
    assert grid_shapes(name, samples) == samples


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("samples", [SCALED_FROM, 30, 100])
def test_more_rates_more_shapes(name, samples):
    rates = _terms_of_a_sample(name)
    want = samples * min(MAX_SHAPE_FACTOR, max(1.0, rates / RATES_PER_SAMPLE))
    got = grid_shapes(name, samples)
    assert abs(got - want) <= 0.5
    assert samples <= got <= MAX_SHAPE_FACTOR * samples


def test_the_heavy_types_at_the_readme_grid():
    """What docs/ops.md states for --samples 30."""
    got = {n: grid_shapes(n, 30) for n in ("eltwise", "conv2d", "sdpa", "addmm", "mm", "bmm", "relu", "softmax")}
    assert got == {"eltwise": 120, "conv2d": 120, "sdpa": 102, "addmm": 102, "mm": 102, "bmm": 102,
                   "relu": 30, "softmax": 42}


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["mm", "eltwise", "relu", "sdpa"]), st.integers(1, 40), st.integers(0, 40),
       st.integers(0, 10 ** 6))
def test_a_larger_grid_begins_with_the_smaller(name, small, more, seed):
    def keys(samples):
        return [str(sorted(p.items())) for n, p, _ in grid_calls([name], samples, seed)]
    a, b = keys(small), keys(small + more)
    assert len(a) == grid_shapes(name, small) and len(b) == grid_shapes(name, small + more)
    assert b[:len(a)] == a
    assert len(set(b)) == len(b)


def test_the_samples_help_states_the_rule_grid_shapes_follows():
    """`ops measure --help` said rates/8 for a release after the rule became rates/5: the
    numbers a user reads are now the ones the grid is drawn by."""
    import re
    import subprocess
    import sys

    text = " ".join(subprocess.run([sys.executable, "-m", "sgdsim.cli", "ops", "measure", "--help"],
                                   capture_output=True, text=True, check=True).stdout.split())
    found = re.search(r"from (\d+) on, a type whose estimator fits more than (\d+) rates gets "
                      r"rates/(\d+) times as many, up to (\d+)x", text)
    assert found, text
    start, more, per, most = (int(v) for v in found.groups())
    rates = REGISTRY["mm"].rates()
    assert rates > more and grid_shapes("mm", 30) == round(30 * min(most, rates / per))
    assert grid_shapes("mm", start - 1) == start - 1  # below it, drawn as asked
