"""Parameter servers colocated on every worker with sharded parameters (arch/colocated.py):
closed forms, through the simulator and the coarse model."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgdsim
from sgdsim.spec import ARCHITECTURES


def closed_form(W: int, size_bytes: float, fwd_s: float, bwd_s: float, Bps: float, batch: int) -> float:
    """Examples/s: each step computes, then pushes and pulls (W-1)/W of the model over its NIC."""
    return batch * W / (fwd_s + bwd_s + 2 * (W - 1) / W * size_bytes / Bps)


def _predict(W, size_mb, fwd_ms, bwd_ms, gbps, model):
    fast = {"steps": 10, "replications": 1} if model == "fine" else {}  # the simulator's alone
    return sgdsim.predict(None, coarse=f"size={size_mb}MB,fwd={fwd_ms}ms,bwd={bwd_ms}ms,batch=32",
                          workers=[W], arch="colocated", mode="sync", bandwidth=f"{gbps}Gbps",
                          model=model, model_error=0, **fast)[0]


@pytest.mark.parametrize("model", ["fine", "coarse"])
@settings(max_examples=12, deadline=None, derandomize=True)
@given(W=st.sampled_from([1, 2, 3, 5, 8, 16]), size_mb=st.integers(1, 500), fwd_ms=st.integers(1, 100),
       bwd_ms=st.integers(1, 200), gbps=st.sampled_from([1, 10, 25, 100]))
def test_within_one_percent_of_closed_form(model, W, size_mb, fwd_ms, bwd_ms, gbps):
    expected = closed_form(W, size_mb * 1e6, fwd_ms / 1e3, bwd_ms / 1e3, gbps * 1e9 / 8, 32)
    assert _predict(W, size_mb, fwd_ms, bwd_ms, gbps, model).throughput == pytest.approx(expected, rel=0.01)


def test_traffic_falls_with_more_shards_unlike_one_server():
    """One server's NIC carries W models a step; colocated NICs carry 2(W-1)/W of one: at 16
    workers on a slow link the colocated shards are several times faster."""
    kw = dict(coarse="size=100MB,fwd=10ms,bwd=20ms,batch=32", workers=[16], mode="sync", bandwidth="1Gbps",
              model="coarse")
    one_ps = sgdsim.predict(None, arch="ps", **kw)[0].throughput
    shards = sgdsim.predict(None, arch="colocated", **kw)[0].throughput
    assert shards > 5 * one_ps


def test_registered_sync_only_and_refused_async():
    assert "colocated" in ARCHITECTURES.names and ARCHITECTURES["colocated"].modes == ("sync",)
    out = subprocess.run([sys.executable, "-m", "sgdsim.cli", "predict", "--coarse",
                          "size=1MB,fwd=1ms,bwd=1ms,batch=1", "--arch", "colocated", "--mode", "async",
                          "--workers", "2"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "sync" in out.stderr
