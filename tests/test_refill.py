"""A refill of the workers' step samples (``_Sim._refill``) draws all workers' fresh samples in
one call. Oracle: the loop it replaced, worker by worker, from a copy of the same generator:
the same samples, and the generator left in the same state."""
import copy
from dataclasses import replace

import numpy as np
import pytest
from conftest import example

from sgdsim.sim.config import SimConfig, WorkerClass
from sgdsim.sim.simulate import _Sim
from sgdsim.sim.state import SAMPLES_PER_WORKER
from sgdsim.spec import Cluster, Control, Link, Strategy


def _loop_refill(samp: list[int], cur: list[int], n_codes, rng) -> list[int]:
    cap, out = SAMPLES_PER_WORKER, list(samp)
    for w, n in enumerate(n_codes):
        used = cur[w]
        keep = out[w * cap + used:(w + 1) * cap]
        fresh = rng.integers(0, n, size=min(used, cap)).tolist()
        out[w * cap:(w + 1) * cap] = keep + fresh
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_refill_is_the_loop_over_workers(seed):
    prof = example("resnet50")
    # jitter: 32 noisy copies of the profiled step to sample from (one would make every sample 0)
    cfg = SimConfig(Strategy(), Cluster(Link(1.25e8)),
                    Control(seed=seed, steps_per_worker=2, warmup_steps=0, jitter_cv=0.1))
    two_steps = replace(prof, durations_s=np.vstack([prof.durations_s, 1.1 * prof.durations_s]))
    # two classes: 32 and 64 rows to sample from, so the workers' bounds differ
    sim = _Sim([WorkerClass("a", prof, 2), WorkerClass("b", two_steps, 3)], cfg)
    assert len(set(int(x) for x in sim.S.samp)) > 1 and len(set(sim.plan.worker_rows.tolist())) == 2
    W, cap = sim.plan.W, SAMPLES_PER_WORKER
    cur = np.random.default_rng(seed).integers(0, cap + 1, size=W)
    cur[0], cur[-1] = 0, cap  # a worker that used none, one that used all
    sim.S.samp_cur[:W] = cur
    before = [int(x) for x in sim.S.samp]
    rng = copy.deepcopy(sim.rng)
    expected = _loop_refill(before, [int(c) for c in cur], sim.plan.worker_rows * sim.info.n_perm, rng)
    sim._refill()
    assert [int(x) for x in sim.S.samp] == expected
    assert [int(x) for x in sim.S.samp_cur[:W]] == [0] * W
    assert sim.rng.integers(0, 1 << 40) == rng.integers(0, 1 << 40)  # the same state after
