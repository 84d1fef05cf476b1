"""Closed-form throughput oracles (TPDS Eq. 7, 8, 11 and friends) on no-overlap DAGs.

For a profile without communication/computation overlap, with batch b, model bytes M, total
worker compute C = forward + backward and bandwidth B (bytes/s), free PS updates:

* one worker (async or sync):            b / (2M/B + C)
* sync ring all-reduce, K workers:       K·b / (C + 2(K-1)/K · M/B)        (TPDS Eq. 11)
* sync PS, processor sharing:            K·b / (2KM/B + C)                  (TPDS Eq. 7)
* sync PS, FCFS:                         K·b / ((K+1)M/B + C)               (TPDS Eq. 8)
* sync PS, hybrid:                       the mean of those two throughputs (TPDS §3.2.1)
* async PS, any W:                       at most b·B/M (a link carries M per step)
"""
from __future__ import annotations

import numpy as np
import pytest

import sgdsim
from conftest import example, layered_profile, run_sim

REL = 1e-9
BPS = 10e9  # 10 Gbit/s
B = BPS / 8  # bytes/s


def _synthetic():
    """Five layers (one without parameters), three profiled steps with the same per-step total
    compute, so that sampling steps cannot change the step time."""
    sizes = [40e6, 0.0, 120e6, 8e6, 30e6]
    fwd = [[0.010, 0.002, 0.030, 0.004, 0.006],
           [0.012, 0.001, 0.028, 0.005, 0.006],
           [0.008, 0.003, 0.031, 0.004, 0.006]]
    bwd = [[0.020, 0.003, 0.050, 0.008, 0.012],
           [0.019, 0.004, 0.050, 0.008, 0.012],
           [0.022, 0.002, 0.049, 0.008, 0.012]]
    prof = layered_profile(sizes, fwd, bwd, overlap=False, batch=64, model="synthetic-nooverlap")
    totals = prof.durations_s.sum(axis=1)
    assert np.allclose(totals, totals[0], rtol=0, atol=1e-15)
    return prof


PROFILES = {
    "resnet50-nooverlap": lambda: example("resnet50-nooverlap"),
    "vgg16-nooverlap": lambda: example("vgg16-nooverlap"),
    "synthetic-nooverlap": _synthetic,
}


@pytest.fixture(scope="module", params=sorted(PROFILES))
def prof(request):
    p = PROFILES[request.param]()
    assert p.job.overlap in (False, None)
    assert p.mean_compute_s("ps") == 0.0  # free PS updates: the oracles assume it
    return p


def _parts(p):
    return p.job.batch_size, p.model_bytes(), p.mean_compute_s()


def _one(p, **kw):
    kw.setdefault("warmup", 2)
    kw.setdefault("steps", 5)
    kw.setdefault("bandwidth", BPS)
    kw.setdefault("model_error", 0)  # the simulator's own interval
    pts = sgdsim.predict(p, **kw)
    assert len(pts) == 1
    return pts[0]


# ----------------------------------------------------------------------------- one worker

@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("sharing", ["ps", "fcfs"])
def test_one_worker(prof, mode, sharing):
    b, M, C = _parts(prof)
    pt = _one(prof, workers=1, mode=mode, sharing=sharing)
    expected = b / (2 * M / B + C)
    assert pt.throughput == pytest.approx(expected, rel=REL)
    assert pt.step_time_s == pytest.approx(2 * M / B + C, rel=REL)
    # deterministic steps: the confidence interval collapses onto the estimate
    assert pt.ci_low == pytest.approx(expected, rel=1e-9)
    assert pt.ci_high == pytest.approx(expected, rel=1e-9)


# ----------------------------------------------------------------------------- synchronous

@pytest.mark.parametrize("K", [1, 2, 4, 8])
def test_sync_allreduce_eq11(prof, K):
    b, M, C = _parts(prof)
    pt = _one(prof, workers=K, mode="sync", arch="allreduce")
    assert pt.throughput == pytest.approx(K * b / (C + 2 * (K - 1) / K * M / B), rel=REL)


@pytest.mark.parametrize("K", [1, 2, 4, 8])
def test_sync_ps_processor_sharing_eq7(prof, K):
    b, M, C = _parts(prof)
    pt = _one(prof, workers=K, mode="sync", sharing="ps")
    assert pt.throughput == pytest.approx(K * b / (2 * K * M / B + C), rel=REL)


@pytest.mark.parametrize("K", [1, 2, 4, 8])
def test_sync_ps_fcfs_eq8(prof, K):
    b, M, C = _parts(prof)
    pt = _one(prof, workers=K, mode="sync", sharing="fcfs")
    assert pt.throughput == pytest.approx(K * b / ((K + 1) * M / B + C), rel=REL)


@pytest.mark.parametrize("K", [2, 4])
def test_sync_hybrid_is_the_mean_of_ps_and_fcfs_throughputs(prof, K):
    """TPDS §3.2.1: the fine model's hybrid averages the PS and FCFS runs' throughputs."""
    b, M, C = _parts(prof)
    x_ps, x_fcfs = K * b / (2 * K * M / B + C), K * b / ((K + 1) * M / B + C)
    pt = _one(prof, workers=K, mode="sync", sharing="hybrid")
    assert pt.throughput == pytest.approx((x_ps + x_fcfs) / 2, rel=REL)
    assert pt.ci_low <= pt.throughput <= pt.ci_high


@pytest.mark.parametrize("K", [2, 8])
def test_sync_ps_flow_cap_limits_each_share(prof, K):
    """Processor sharing with a per-flow cap c: each of K flows gets min(c, B/K)."""
    b, M, C = _parts(prof)
    cap = 0.3 * B
    rate = min(cap, B / K)
    pt = _one(prof, workers=K, mode="sync", sharing="ps", flow_cap=8 * cap)
    assert pt.throughput == pytest.approx(K * b / (2 * M / rate + C), rel=REL)


# ----------------------------------------------------------------------------- asynchronous

@pytest.mark.parametrize("W", [32, 64])
@pytest.mark.parametrize("sharing", ["ps", "fcfs"])
@pytest.mark.parametrize("name", ["vgg16-nooverlap", "resnet50-nooverlap"])
def test_async_many_workers_approach_link_bound(name, W, sharing):
    p = example(name)
    b, M, _ = _parts(p)
    bound = b * B / M
    pt = _one(p, workers=W, mode="async", sharing=sharing, warmup=3, steps=20)
    assert pt.throughput <= bound * (1 + REL)
    assert pt.throughput >= 0.8 * bound
    if sharing == "fcfs":
        # FCFS keeps the links saturated in a periodic pattern: no spread at all
        assert pt.ci_high <= bound * (1 + REL)
    assert pt.bottleneck in ("downlink", "uplink")
    assert pt.utilization[pt.bottleneck] <= 1 + REL


def test_async_throughput_grows_then_saturates():
    """W = 1 is the one-worker oracle, W = 64 is within 20 % of b·B/M; never above it."""
    p = example("vgg16-nooverlap")
    b, M, C = _parts(p)
    bound = b * B / M
    pts = sgdsim.predict(p, workers="1,2,64", bandwidth=BPS, mode="async", sharing="fcfs",
                         warmup=3, steps=10)
    thr = [pt.throughput for pt in pts]
    assert thr[0] == pytest.approx(b / (2 * M / B + C), rel=REL)
    assert thr[0] < thr[1] <= bound * (1 + REL)
    assert 0.8 * bound <= thr[2] <= bound * (1 + REL)


# ----------------------------------------------------------------------------- flow cap

@pytest.mark.parametrize("sharing", ["ps", "fcfs"])
@pytest.mark.parametrize("ratio", [0.4, 1 / 3])
def test_flow_cap_one_worker(prof, sharing, ratio):
    """One worker under a cap c < B transfers at c: the one-worker oracle with B -> c."""
    b, M, C = _parts(prof)
    cap = ratio * B
    pt = _one(prof, workers=1, sharing=sharing, flow_cap=8 * cap)
    assert pt.throughput == pytest.approx(b / (2 * M / cap + C), rel=REL)


def test_flow_cap_above_bandwidth_changes_nothing(prof):
    b, M, C = _parts(prof)
    pt = _one(prof, workers=1, flow_cap=3 * BPS)
    assert pt.throughput == pytest.approx(b / (2 * M / B + C), rel=REL)


def test_flow_cap_applies_to_allreduce(prof):
    b, M, C = _parts(prof)
    cap, K = 0.25 * B, 4
    pt = _one(prof, workers=K, mode="sync", arch="allreduce", flow_cap=8 * cap)
    assert pt.throughput == pytest.approx(K * b / (C + 2 * (K - 1) / K * M / cap), rel=REL)


# ----------------------------------------------------------------------------- parsing overhead

@pytest.mark.parametrize("alpha,beta", [(2e-9, 0.0), (0.0, 3e-3), (1e-9, 5e-4)])
def test_overhead_single_parameter_layer_adds_sum_over_comm_ops(alpha, beta):
    """down -> fwd/bwd chain -> up -> upd: every comm op's parsing cost (α·size + β) lies on
    the critical path, so the one-worker step grows by exactly Σ_comm (α·size + β)."""
    size = 50e6
    p = layered_profile([0.0, size, 0.0], [0.01, 0.02, 0.005], [0.02, 0.03, 0.01],
                        overlap=False, batch=16)
    b, M, C = _parts(p)
    base = 2 * M / B + C
    extra = sum(alpha * op.size_bytes + beta for op in p.ops if op.kind == "comm")
    pt = _one(p, workers=1, overhead_alpha=alpha, overhead_beta=beta)
    assert pt.throughput == pytest.approx(b / (base + extra), rel=REL)


def _no_overlap_step_with_overhead(p, Bps, alpha, beta):
    """One worker's step on a PipeDream no-overlap profile, by hand.

    Downlinks back to back, then the compute chain, whose root forward also parses every
    received tensor (Σ_down α·s + β). Uplinks go back to back in profile order; the PS
    update of layer i (α·s_i + β on the worker's PS core) starts when up_i has arrived and
    the previous update is done, so it overlaps the next uplinks.
    """
    ups = [op for op in p.ops if op.resource == "uplink"]
    downs = [op for op in p.ops if op.resource == "downlink"]
    upds = {op.deps[0]: i for i, op in enumerate(p.ops) if op.resource == "ps"}
    assert all(len(op.deps) == 1 for op in p.ops if op.resource == "ps")
    t = sum(op.size_bytes for op in downs) / Bps
    t += p.mean_compute_s() + sum(alpha * op.size_bytes + beta for op in downs)
    up_end, upd_end = t, t
    for op in ups:
        up_end += op.size_bytes / Bps
        dur = alpha * op.size_bytes + beta + p.durations_s[0, upds[op.id]]
        upd_end = max(up_end, upd_end) + dur
    return max(up_end, upd_end)


@pytest.mark.parametrize("name", ["vgg16-nooverlap", "resnet50-nooverlap"])
@pytest.mark.parametrize("alpha,beta", [(1e-9, 0.0), (0.0, 2e-3), (3e-9, 1e-4)])
def test_overhead_on_example_profiles(name, alpha, beta):
    p = example(name)
    assert p.n_steps == 1
    b = p.job.batch_size
    step = _no_overlap_step_with_overhead(p, B, alpha, beta)
    pt = _one(p, workers=1, overhead_alpha=alpha, overhead_beta=beta)
    assert pt.throughput == pytest.approx(b / step, rel=REL)
    # never cheaper than without overhead, never dearer than paying it all serially
    M, C = p.model_bytes(), p.mean_compute_s()
    total = sum(alpha * op.size_bytes + beta for op in p.ops if op.kind == "comm")
    assert 2 * M / B + C < step <= 2 * M / B + C + total * (1 + REL)


def test_overhead_beta_accepts_units():
    p = layered_profile([0.0, 10e6], [0.01, 0.02], [0.02, 0.03], overlap=False, batch=8)
    b, M, C = _parts(p)
    pt = _one(p, workers=1, overhead_beta="2ms")
    assert pt.throughput == pytest.approx(b / (2 * M / B + C + 2 * 2e-3), rel=REL)


# ----------------------------------------------------------------------------- utilization

def test_one_worker_utilization_matches_time_shares(prof):
    b, M, C = _parts(prof)
    step = 2 * M / B + C
    pt = _one(prof, workers=1)
    assert pt.utilization["worker"] == pytest.approx(C / step, rel=1e-9)
    assert pt.utilization["downlink"] == pytest.approx(M / B / step, rel=1e-9)
    assert pt.utilization["uplink"] == pytest.approx(M / B / step, rel=1e-9)
    assert pt.utilization["ps"] == pytest.approx(0.0, abs=1e-12)


def test_simulate_link_bytes_one_worker():
    """After ``steps`` whole steps, each link carried exactly steps·M bytes, none in flight."""
    p = _synthetic()
    r = run_sim(p, Bps=B, steps=3, warmup=0, timeline=False)
    for link in ("downlink", "uplink"):
        lb = r.link_bytes[link]
        assert lb["carried"] == pytest.approx(3 * p.model_bytes(), rel=1e-12)
        assert lb["completed_chunks"] == pytest.approx(3 * p.model_bytes(), rel=1e-12)
        assert lb["in_flight"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("K,mode", [(1, "async"), (4, "sync")])
def test_automatic_step_count_reaches_the_oracle(K, mode):
    """``steps='auto'`` (the default): at least max(20·W, 100) steps; deterministic runs stop at
    the first round since the interval has collapsed."""
    p = example("vgg16-nooverlap")
    b, M, C = _parts(p)
    pt = sgdsim.predict(p, workers=K, bandwidth=BPS, mode=mode, sharing="fcfs", warmup=2, model_error=0)[0]
    assert pt.throughput == pytest.approx(K * b / ((K + 1) * M / B + C), rel=REL)
    assert pt.steps_measured >= max(20 * K, 100)
    assert pt.steps_measured % K == 0
    assert pt.ci_high - pt.ci_low <= 2 * 0.01 * pt.throughput


@pytest.mark.parametrize("K,steps", [
    (3, 10), (6, 10), (4, 5),
    (4, 25),
])
def test_sync_deterministic_interval_collapses(K, steps):
    """Sync steps of a one-step profile are all identical: the CI has zero width."""
    p = example("vgg16-nooverlap")
    b, M, C = _parts(p)
    pt = _one(p, workers=K, mode="sync", sharing="fcfs", steps=steps)
    expected = K * b / ((K + 1) * M / B + C)
    assert pt.throughput == pytest.approx(expected, rel=REL)
    assert pt.ci_low == pytest.approx(expected, rel=1e-9)
    assert pt.ci_high == pytest.approx(expected, rel=1e-9)
