"""``netbench --interference``: the compute share of an all-reduce, from a compute loop alone and
beside back-to-back calls. Oracles: the estimator on exact synthetic rates, a real two-rank run
on loopback whose fields obey the measurement's own bounds, and one-line errors."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from sgdsim.errors import ConfigError
from sgdsim.hardware import Hardware, load_hardware
from sgdsim.lab.interference import share_from, summarize

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


@pytest.mark.parametrize("s", [0.0, 0.2, 0.45, 0.9])
@pytest.mark.parametrize("busy", [1.0, 0.6])
def test_share_is_recovered_from_exact_rates(s, busy):
    r0 = 5000.0
    r1 = (1 - s * busy) * r0  # what a call occupying s of the device leaves the loop
    assert share_from(r0, r1, busy) == pytest.approx(s, abs=1e-12)


def test_noise_above_the_alone_rate_is_no_share_and_the_median_is_kept():
    assert share_from(1000.0, 1010.0, 1.0) == 0.0
    rounds = [{"r0": 100.0, "r1": r1, "busy": 1.0} for r1 in (90.0, 50.0, 80.0)]
    out = summarize(rounds)
    assert out["interference_shares"] == pytest.approx([0.1, 0.5, 0.2])
    assert out["allreduce_compute_share"] == pytest.approx(0.2)


@pytest.mark.parametrize("args", [(0.0, 1.0, 1.0), (100.0, 50.0, 0.0), (100.0, 50.0, 1.5),
                                  (float("nan"), 1.0, 1.0)])
def test_impossible_measurements_are_refused(args):
    with pytest.raises(ConfigError):
        share_from(*args)


def _netbench(*argv):
    return subprocess.run([sys.executable, "-m", "sgdsim.cli", "netbench", *argv],
                          capture_output=True, text=True, timeout=300)


@needs_torch
def test_a_real_loopback_run_adds_the_share_and_keeps_the_file(tmp_path):
    base = Hardware(bandwidth_bps=1e9, latency_s=1e-5, overhead_alpha_s_per_byte=8e-9,
                    overhead_beta_s=2e-5, fcfs_weight=0.3, ring_latency_s=1e-3)
    src = tmp_path / "hw.json"
    src.write_text(json.dumps(base.to_dict()))
    out = tmp_path / "hw-int.json"
    r = _netbench("--local", "--add-to", str(src), "--interference", "1MiB", "-o", str(out))
    assert r.returncode == 0, r.stderr
    hw = load_hardware(out)
    assert (hw.bandwidth_bps, hw.fcfs_weight, hw.ring_latency_s) == (1e9, 0.3, 1e-3)
    m = hw.measured
    assert m["interference_size_bytes"] == 1 << 20
    assert 0 <= hw.allreduce_compute_share < 1
    assert sorted(m["interference_shares"])[1] == hw.allreduce_compute_share  # the median of 3
    for rnd in m["interference_rounds"]:
        assert 0 < rnd["busy"] <= 1 and rnd["r0"] > 0 and rnd["r1"] > 0
        assert rnd["call_alone_s"] > 0 and rnd["call_with_compute_s"] > 0
    assert "occupies" in r.stdout and "--allreduce-compute-share" in r.stdout


@pytest.mark.parametrize("argv,msg", [
    (["--host", "127.0.0.1", "--interference", "1MB"], "loopback (--local) or the lab"),
    (["--local", "--interference", "4XB"], "unknown size unit"),
    (["--local", "--interference", "2GiB"], "from 4B to 1GiB"),
    (["--local", "--add-to", "examples/grids/hardware-lab-100mbps.json"], "needs something to add"),
])
def test_bad_interference_options_are_one_line(argv, msg):
    r = _netbench(*argv)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and msg in r.stderr, r.stderr
