"""TPDS §3.2.1: the fine synchronous PS model runs the simulation twice, with PS and with FCFS
link sharing, "and use[s] the average of their throughput estimates as our prediction".

Hand-computed oracle: one layer of M = 1 MB at B = 1 MB/s, no overlap, forward 0.1 s and
backward 0.2 s (C = 0.3 s), batch 10, K = 2 workers, free PS updates.

* PS (Eq. 7):   both pulls share B, 2 s; compute 0.3 s; both pushes share B, 2 s.
                T = 4.3 s, x_ps = 20 / 4.3 = 4.651 examples/s.
* FCFS (Eq. 8): pulls end at 1 s and 2 s; worker 0 pushes over [1.3, 2.3], worker 1 over
                [2.3, 3.3] (the link is free again at 2.3). T = 3.3 s, x_fcfs = 20 / 3.3.
* hybrid:       (x_ps + x_fcfs) / 2 = 5.356 examples/s (not 20 / ((4.3 + 3.3) / 2) = 5.263,
                the step-time mean of the coarse Eq. 9).
"""
from __future__ import annotations

import pytest

import sgdsim
from conftest import layered_profile

MB = 1e6
PROF = layered_profile([MB], [0.1], [0.2], overlap=False, batch=10, model="one-layer")


def _sync(sharing: str, **kw):
    pts = sgdsim.predict(PROF, workers=2, bandwidth=8 * MB, mode="sync", sharing=sharing,
                         warmup=1, steps=4, model_error=0, **kw)
    return pts[0]


def test_the_two_runs_are_eq7_and_eq8():
    assert _sync("ps").throughput == pytest.approx(20 / 4.3, rel=1e-9)
    assert _sync("fcfs").throughput == pytest.approx(20 / 3.3, rel=1e-9)


def test_hybrid_is_the_mean_of_the_two_throughputs():
    pt = _sync("hybrid")
    expected = (20 / 4.3 + 20 / 3.3) / 2
    assert pt.throughput == pytest.approx(expected, rel=1e-9)
    assert pt.throughput != pytest.approx(20 / ((4.3 + 3.3) / 2), rel=1e-3)  # not Eq. 9's mix
    assert pt.step_time_s == pytest.approx(20 / expected, rel=1e-9)  # one step gives K·b
    assert pt.ci_low <= pt.throughput <= pt.ci_high


@pytest.mark.parametrize("w", [0.0, 0.2, 1.0])
def test_a_measured_fcfs_weight_weights_the_throughputs(w):
    pt = _sync("hybrid", fcfs_weight=w)
    assert pt.throughput == pytest.approx((1 - w) * 20 / 4.3 + w * 20 / 3.3, rel=1e-9)
