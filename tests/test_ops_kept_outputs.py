"""Forward copies timed with their outputs kept alive, as a step's autograd keeps activations
(``time_call(keep_outputs=True)``, docs/ops-runs.md, run 52)."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sgdsim.ops.measure import Runner, _timed, time_call  # noqa: E402
from sgdsim.ops.optypes import REGISTRY  # noqa: E402

RELU = REGISTRY["relu"].build({"numel": 4096, "gi": 1}, "float32")


def test_kept_outputs_are_each_written_to_memory_of_their_own():
    runner = Runner(RELU, np.random.default_rng(0), "cpu", keep_outputs=True)
    sets = runner.fresh(6)
    outs = runner.forward(sets)
    assert len(outs) == 6
    assert len({o.data_ptr() for o in outs}) == 6  # six live blocks, none reused
    inputs = {args[0].data_ptr() for args, _, _ in sets}
    assert len(inputs) == 1  # the copies still read one warm input, as before


def test_by_default_nothing_outlives_its_copy():
    runner = Runner(RELU, np.random.default_rng(0), "cpu")
    assert runner.forward(runner.fresh(6)) == []


class _Out:
    pass


class _FakeRunner:
    """Records which outputs were alive when the clock stopped (at ``sync``)."""

    def __init__(self):
        self.refs: list = []
        self.alive_at_sync: list[int] = []

    def fresh(self, k):
        return [((), {}, []) for _ in range(k)]

    def forward(self, sets):
        outs = [_Out() for _ in sets]
        self.refs = [weakref.ref(o) for o in outs]
        return outs

    def sync(self):
        self.alive_at_sync.append(sum(r() is not None for r in self.refs))


def test_kept_outputs_live_through_the_timed_run_and_are_freed_after_it():
    fake = _FakeRunner()
    _timed(fake, 5, fake.sync)
    gc.collect()
    assert fake.alive_at_sync == [0, 5]  # none before the run; all five when the clock stops
    assert all(r() is None for r in fake.refs)  # gone once the timing returned


def test_forward_only_timing_leaves_the_backward_untimed():
    torch.set_num_threads(1)
    both = time_call(RELU, np.random.default_rng(1), repeats=3)
    fwd_only = time_call(RELU, np.random.default_rng(1), repeats=3, keep_outputs=True,
                         backward=False)
    assert both.bwd_s > 0 and fwd_only.bwd_s == 0.0
    assert fwd_only.fwd_s > 0 and fwd_only.samples >= 3
