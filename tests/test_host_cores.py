"""Workers sharing one host's cores (topology/hosts.py). Oracles: Eq. 11 and Eqs. 7-9 with the
compute stretched by W/K by hand (workers computing together); a hand timeline of workers that
compute at different times (the simulator shares the cores among those computing); W <= K and
async unchanged; the hardware file and CLI edges."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import sgdsim
from sgdsim.analytic.sync import ring_allreduce_s
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.hardware import hardware_from_dict
from sgdsim.topology import compute_slowdown

from conftest import layered_profile

MB = 1e6
SIZES, FWD, BWD = [4 * MB, 2 * MB], [0.02, 0.03], [0.05, 0.04]
COMPUTE = sum(FWD) + sum(BWD)
PROF = layered_profile(SIZES, FWD, BWD, overlap=False, batch=16)
BW = "100Mbps"


@pytest.mark.parametrize("W,K", [(8, 2), (6, 4), (3, 2), (2, 2), (4, 8)])
def test_allreduce_compute_stretches_by_w_over_k_in_both_models(W, K):
    calls = ring_allreduce_s(SIZES, W, 100e6 / 8).sum()
    want = COMPUTE * max(1.0, W / K) + calls  # no overlap: compute, then the calls
    kw = dict(workers=W, bandwidth=BW, mode="sync", arch="allreduce", host_cores=K)
    fine = sgdsim.predict(PROF, steps=4, warmup=1, replications=1, **kw)[0]
    assert fine.step_time_s == pytest.approx(want, rel=1e-9)
    coarse = sgdsim.predict(PROF, model="coarse", **kw)[0]
    assert coarse.step_time_s == pytest.approx(want, rel=1e-9)


def test_sync_ps_with_ps_sharing_is_eq_7_with_stretched_compute():
    W, K = 6, 2
    B = 100e6 / 8
    want = 2 * W * sum(SIZES) / B + COMPUTE * W / K  # Eq. 7, no update time
    kw = dict(workers=W, bandwidth=BW, mode="sync", sharing="ps", host_cores=K)
    fine = sgdsim.predict(PROF, steps=4, warmup=1, replications=1, **kw)[0]
    coarse = sgdsim.predict(PROF, model="coarse", **kw)[0]
    assert fine.step_time_s == pytest.approx(want, rel=1e-9)
    assert coarse.step_time_s == pytest.approx(want, rel=1e-9)


def test_sync_workers_that_compute_at_different_times_share_the_cores_only_then():
    """Hand timeline, K = 1, two sync workers, FCFS links at 1 MB/s, one 1 MB layer, 1.5 s of
    compute. Pulls [0, 1] and [1, 2]; worker 0 computes alone on [1, 2] (1 s of work), then both
    at half speed to 3 (worker 0 done), worker 1 alone from 3 to 4; pushes [3, 4] and [4, 5]:
    a 5 s step. Without shared cores 4.5 s; the static max(1, W/K) stretch would say 6 s."""
    prof = layered_profile([1e6], [0.5], [1.0], overlap=False, batch=1)
    kw = dict(workers=2, bandwidth=8e6, mode="sync", sharing="fcfs", steps=20, warmup=2, replications=1)
    assert sgdsim.predict(prof, host_cores=1, **kw)[0].step_time_s == pytest.approx(5.0, rel=1e-9)
    assert sgdsim.predict(prof, **kw)[0].step_time_s == pytest.approx(4.5, rel=1e-9)
    assert sgdsim.predict(prof, host_cores=2, **kw)[0].step_time_s == pytest.approx(4.5, rel=1e-9)


def test_the_engine_shares_the_cores_only_where_it_can_see_and_afford_it():
    from sgdsim.topology import shared_cores
    from sgdsim.topology.hosts import SHARED_CORES_MAX_WORKERS as MAX

    assert shared_cores(8, 8, 2, "sync") == 2 and shared_cores(MAX, MAX, 2, "sync") == 2
    assert shared_cores(MAX + 1, MAX + 1, 2, "sync") == 0  # the O(W) re-timing: the stretch instead
    assert shared_cores(8, 1, 2, "sync") == 0  # identical ranks simulated once: lock-step, the stretch
    assert shared_cores(8, 8, 2, "async") == shared_cores(2, 2, 2, "sync") == shared_cores(8, 8, None, "sync") == 0


def test_async_is_not_slowed_and_asking_for_it_is_refused():
    from sgdsim.predict import predict_with
    kw = dict(bandwidth=BW, mode="async", seed=3, steps=30, warmup=2, replications=2)
    assert predict_with(PROF, {**kw, "host_cores": 1}, workers=4)[0].throughput == \
        predict_with(PROF, kw, workers=4)[0].throughput
    with pytest.raises(ConfigError, match="--host-cores applies to --mode sync"):
        sgdsim.predict(PROF, host_cores=1, workers=4, **kw)  # as the CLI refuses the option
    assert compute_slowdown(8, 2, "async") == 1.0 and compute_slowdown(8, None, "sync") == 1.0


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_impossible_core_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="--host-cores"):
        sgdsim.predict(PROF, workers=2, bandwidth=BW, mode="sync", host_cores=bad, model="coarse")


def _file(**extra):
    return {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e8, "latency_s": 1e-5,
            "overhead_alpha_s_per_byte": 8e-8, "overhead_beta_s": 0.0, **extra}


def test_hardware_file_carries_host_cores_into_predictions():
    hw = hardware_from_dict(_file(host_cores=2))
    assert hw.host_cores == 2 and isinstance(hw.host_cores, int)
    assert hw.predict_kwargs("allreduce")["host_cores"] == 2
    assert "host_cores" not in hardware_from_dict(_file()).predict_kwargs("ps")
    for bad in (0, 1.5, "2"):
        with pytest.raises(ProfileError, match="host_cores"):
            hardware_from_dict(_file(host_cores=bad))


def test_cli_option_and_hardware_file(tmp_path):
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(_file(host_cores=2)))
    base = [sys.executable, "-m", "sgdsim.cli", "predict", "examples/profiles/alexnet.json", "--mode",
            "sync", "--arch", "allreduce", "--workers", "8", "--model", "coarse", "--format", "csv"]
    runs = {name: subprocess.run(base + extra, capture_output=True, text=True)
            for name, extra in (("file", ["--hardware", str(path)]),
                                ("option", ["--bandwidth", "100Mbps", "--host-cores", "2"]),
                                ("none", ["--bandwidth", "100Mbps"]))}
    assert all(r.returncode == 0 for r in runs.values()), [r.stderr for r in runs.values()]
    assert runs["file"].stdout == runs["option"].stdout != runs["none"].stdout
    r = subprocess.run(base + ["--host-cores", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--host-cores" in r.stderr


def test_cli_refuses_host_cores_where_it_would_be_ignored():
    r = subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", "examples/profiles/alexnet.json",
                        "--mode", "async", "--workers", "4", "--model", "coarse", "--host-cores", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "--host-cores applies to --mode sync" in r.stderr
