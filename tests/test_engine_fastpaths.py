"""Shortcuts in the event engine must not change what is simulated.

- zero-duration sinks on exclusive resources complete without a timer (``plan._instant``),
  and chains on one exclusive resource run as one op (``sim/contract.py``); with a timeline
  both are off, so the two runs must agree up to the rounding of summed durations;
- the kernel keeps the timer it woke up until ``retire`` (a handler usually reschedules it).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sgdsim.sim import WorkerClass
from sgdsim.sim.kernel import make_kernel, pop_next, retire, schedule
from sgdsim.sim.plan import build_plan
from sgdsim.sim.simulate import _Sim

from conftest import approx, layered_profile, run_sim
from simcfg import simcfg

SIZES = [4e5, 0, 2e5, 1e5]
FWD = [0.02, 0.01, 0.03, 0.01]
BWD = [0.04, 0.02, 0.05, 0.02]


def _profile(overlap: bool):
    return layered_profile(SIZES, FWD, BWD, overlap=overlap)  # PS updates take no time


def test_only_zero_time_sinks_on_exclusive_resources_are_instant():
    prof = _profile(overlap=True)
    plan, info, *_ = build_plan([WorkerClass("w", prof, 2)], simcfg(bandwidth_bps=8e6))
    instant = {prof.ops[i].id for i, flag in zip(info.op_index, plan.instant) if flag}
    assert instant == {"upd:L0", "upd:L2", "upd:L3"}
    plan, *_ = build_plan([WorkerClass("w", prof, 2)], simcfg(bandwidth_bps=8e6, timeline=True))
    assert not plan.instant.any()


@pytest.mark.parametrize("mode,sharing", [("async", "ps"), ("async", "fcfs"), ("sync", "ps")])
@pytest.mark.parametrize("W", [1, 3])
@pytest.mark.parametrize("overlap", [True, False])
def test_instant_sinks_leave_every_completion_time_unchanged(mode, sharing, W, overlap):
    prof = _profile(overlap)
    cfg = simcfg(bandwidth_bps=8e6, mode=mode, sharing=sharing, seed=5,
                    warmup_steps=2, steps_per_worker=6)
    fast = _Sim([WorkerClass("w", prof, W)], cfg)
    slow = _Sim([WorkerClass("w", prof, W)], replace(cfg, control=replace(cfg.control, timeline=True)))
    assert fast.plan.instant.any() and not slow.plan.instant.any()
    for sim in (fast, slow):
        assert sim.run_until(8 * W, 10**7)
    assert np.asarray(fast.S.comp_t[:8 * W]) == approx(np.asarray(slow.S.comp_t[:8 * W]), 1e-12)
    a = run_sim(prof, workers=W, Bps=1e6, steps=6, warmup=2, timeline=False, mode=mode,
                sharing=sharing, seed=5)
    b = run_sim(prof, workers=W, Bps=1e6, steps=6, warmup=2, timeline=True, mode=mode,
                sharing=sharing, seed=5)
    assert a.throughput == approx(b.throughput, 1e-12)
    # a chunk ending at the very instant of the last counted completion may fall either side
    # of the window's end (its zero-time sink was the last event, or was not)
    assert a.utilization == pytest.approx(b.utilization, rel=0.05)


def test_retire_drops_a_timer_unless_its_handler_rescheduled_it():
    K = make_kernel(3)
    schedule(K, 0, 1.0)
    schedule(K, 1, 2.0)
    schedule(K, 2, 3.0)
    assert pop_next(K) == 0 and K.clock[0] == 1.0
    schedule(K, 0, 2.5)  # the handler starts timer 0's next chunk
    retire(K, 0)
    assert pop_next(K) == 1 and K.clock[0] == 2.0
    retire(K, 1)  # not rescheduled: gone
    assert pop_next(K) == 0 and K.clock[0] == 2.5
    retire(K, 0)
    assert pop_next(K) == 2 and K.clock[0] == 3.0
    schedule(K, 2, np.inf)  # the handler cancels it: retire must cope with an absent timer
    retire(K, 2)
    assert pop_next(K) == -1
