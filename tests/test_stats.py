import numpy as np
import pytest

from sgdsim.sim.stats import estimate


def test_periodic_single_worker_is_exact_with_zero_width():
    times = 1.0 + 0.5 * np.arange(1, 101)
    est = estimate(1.0, times, np.zeros(100, int), np.array([32.0]))
    assert est.throughput == pytest.approx(64.0)
    assert est.half_width == pytest.approx(0.0, abs=1e-9)


def test_staggered_workers_are_not_overcounted():
    # two workers, period 1 s each, offset by 0.9 s; window starts at worker 0's completion
    t0 = 0.0
    w0 = np.arange(1, 41) * 1.0
    w1 = np.arange(0, 40) * 1.0 + 0.9 + 0.0
    w1 = w1[w1 > t0]
    times = np.concatenate([w0, w1])
    workers = np.concatenate([np.zeros(len(w0), int), np.ones(len(w1), int)])
    order = np.argsort(times, kind="stable")
    est = estimate(t0, times[order], workers[order], np.array([1.0, 1.0]))
    assert est.throughput == pytest.approx(2.0)  # a naive count/time gives 81/40 = 2.025


def test_noisy_interval_covers_the_mean():
    rng = np.random.default_rng(1)
    gaps = rng.exponential(0.1, size=4000)
    times = np.cumsum(gaps)
    est = estimate(0.0, times, np.zeros(len(times), int), np.array([1.0]))
    assert abs(est.throughput - 10.0) < 3 * est.half_width + 0.05
    assert 0 < est.half_width < 1.0


def test_empty_window():
    est = estimate(0.0, np.zeros(0), np.zeros(0, int), np.array([1.0]))
    assert est.throughput == 0.0 and est.half_width == float("inf")
