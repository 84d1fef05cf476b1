"""Network calibration beyond one link: hybrid sharing's FCFS weight (``lab.fairness``), the
gloo all-reduce bandwidth (``lab.gloo_bench``), the hardware-file fields that carry them, and
how ``predict`` and ``validate`` use them. Oracles: the FCFS and processor-sharing completion
patterns, exact α·w + β data, TPDS Eq. 7/8 as the end points of the weighted hybrid."""
from __future__ import annotations

import json
import threading

import pytest

from sgdsim import predict
from sgdsim.analytic.coarse_profile import parse_coarse
from sgdsim.analytic.sync import sync_ps
from sgdsim.cli import main as cli_main
from sgdsim.errors import ConfigError, ProfileError
from sgdsim.lab import fairness
from sgdsim.lab.gloo_bench import summarize as gloo_summary, wire_bytes
from sgdsim.hardware import Hardware, load_hardware, save_hardware

COARSE = parse_coarse("size=2MB,fwd=20ms,bwd=40ms,batch=16")
BPS = 1e8


# ----------------------------------------------------------------------------- fcfs weight

@pytest.mark.parametrize("n", [2, 3, 5])
def test_fcfs_weight_end_points(n):
    T = 0.8
    assert fairness.fcfs_weight([n * T] * n) == pytest.approx(0.0, abs=1e-12)  # processor sharing
    assert fairness.fcfs_weight([k * T for k in range(1, n + 1)]) == pytest.approx(1.0)  # FCFS


def test_fcfs_weight_interpolates_linearly_in_the_mean():
    T, n, w = 1.0, 3, 0.3
    fair, fcfs = [n * T] * n, [T, 2 * T, 3 * T]
    mixed = [(1 - w) * a + w * b for a, b in zip(fair, fcfs)]
    assert fairness.fcfs_weight(mixed) == pytest.approx(w)


def test_fcfs_weight_clips_and_degenerate_rounds():
    assert fairness.fcfs_weight([0.1, 0.1, 3.0]) == 1.0  # more unfair than FCFS: clipped
    assert fairness.fcfs_weight([1.0]) == 0.0
    assert fairness.fcfs_weight([0.0, 0.0]) == 0.0


def test_summarize_per_direction():
    rounds = [{"direction": "down", "completions_s": [2.0, 2.0]},
              {"direction": "up", "completions_s": [1.0, 2.0]}]
    s = fairness.summarize(rounds)
    assert s["fcfs_weight_down"] == 0.0 and s["fcfs_weight_up"] == pytest.approx(1.0)
    assert s["fcfs_weight"] == pytest.approx(0.5)
    with pytest.raises(Exception, match="no round"):
        fairness.summarize([])


def test_hub_and_peers_over_loopback():
    """The real protocol: every round moves size bytes per peer and times each transfer."""
    size, peers, rounds = 200_000, 2, 2
    srv_port = {}

    def announce(line, flush=True):
        srv_port["port"] = int(line.split()[-1])
        ready.set()

    ready = threading.Event()
    out = {}
    hub = threading.Thread(target=lambda: out.update(r=fairness.hub(peers, size, rounds, 0.0,
                                                                    announce=announce)))
    hub.start()
    assert ready.wait(10)
    threads = [threading.Thread(target=fairness.peer, args=("127.0.0.1", srv_port["port"], size))
               for _ in range(peers)]
    for t in threads:
        t.start()
    hub.join(30)
    for t in threads:
        t.join(10)
    r = out["r"]
    assert [x["direction"] for x in r] == ["down", "up"] * rounds
    assert all(len(x["completions_s"]) == peers and min(x["completions_s"]) > 0 for x in r)
    assert 0.0 <= fairness.summarize(r)["fcfs_weight"] <= 1.0


# ----------------------------------------------------------------------------- gloo fit

def test_gloo_summary_recovers_exact_bandwidths():
    ranks, B_ar, beta_ar, B_p2p = 3, 90e6, 2e-3, 95e6
    sizes = [1 << 20, 4 << 20, 16 << 20]
    raw = {"p2p": [[s, 8 * s / B_p2p + 1e-4] for s in sizes],
           "allreduce": [[s, 8 * wire_bytes(s, ranks) / B_ar + beta_ar] for s in sizes]}
    g = gloo_summary(raw, ranks)
    assert g["allreduce_bandwidth_bps"] == pytest.approx(B_ar, rel=1e-9)
    assert g["allreduce_beta_s"] == pytest.approx(beta_ar, rel=1e-6)
    assert g["gloo_p2p_bandwidth_bps"] == pytest.approx(B_p2p, rel=1e-9)
    assert wire_bytes(10, 2) == 10 and wire_bytes(12, 4) == 18  # 2(N-1)/N · size


# ----------------------------------------------------------------------------- hardware file

def _hw(**kw) -> Hardware:
    return Hardware(bandwidth_bps=1e8, latency_s=1e-5, overhead_alpha_s_per_byte=8e-8,
                    overhead_beta_s=0.0, **kw)


def test_hardware_round_trip_new_fields(tmp_path):
    path = tmp_path / "hw.json"
    save_hardware(_hw(fcfs_weight=0.2, allreduce_bandwidth_bps=9e7), path)
    back = load_hardware(path)
    assert back.fcfs_weight == 0.2 and back.allreduce_bandwidth_bps == 9e7
    assert back.bandwidth_for("allreduce") == 9e7 and back.bandwidth_for("ps") == 1e8
    save_hardware(_hw(), tmp_path / "old.json")  # files without them still load
    old = load_hardware(tmp_path / "old.json")
    assert old.fcfs_weight is None and old.bandwidth_for("allreduce") == 1e8
    assert "fcfs_weight" not in json.loads((tmp_path / "old.json").read_text())


@pytest.mark.parametrize("field, value", [("fcfs_weight", 1.5), ("fcfs_weight", "0.2"),
                                          ("allreduce_bandwidth_bps", -1), ("allreduce_bandwidth_bps", True)])
def test_hardware_bad_new_fields(tmp_path, field, value):
    path = tmp_path / "hw.json"
    save_hardware(_hw(), path)
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=field) as err:
        load_hardware(path)
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- predictions

@pytest.mark.parametrize("K", [2, 3, 6])
@pytest.mark.parametrize("w", [0.0, 0.2, 1.0])
def test_coarse_weighted_hybrid(K, w):
    """Uplink term (1 − w)·K·M/B + w·M/B: Eq. 7 at w = 0, Eq. 8 at w = 1."""
    MB = 8 * COARSE.model_bytes / BPS
    C = COARSE.forward_s + COARSE.backward_s + COARSE.update_s
    step = K * MB + C + ((1 - w) * K + w) * MB
    got = sync_ps([(COARSE, K)], BPS / 8, "hybrid", fcfs_weight=w)
    assert got.throughput == pytest.approx(K * COARSE.batch_size / step, rel=1e-12)
    end = {0.0: "ps", 1.0: "fcfs"}.get(w)
    if end:
        assert got.throughput == pytest.approx(sync_ps([(COARSE, K)], BPS / 8, end).throughput, rel=1e-12)


@pytest.mark.parametrize("K", [2, 4])
def test_fine_weighted_hybrid_mixes_ps_and_fcfs_throughputs(K):
    """x = (1 − w)·x_ps + w·x_fcfs (TPDS §3.2.1's mean of the two runs, weighted by w); the
    coarse Eq. 9 mixes step times, so the two meet only at w = 0 and w = 1."""
    kw = dict(coarse=COARSE, workers=K, bandwidth=BPS, mode="sync", steps=40, warmup=5)
    ps, fcfs = (predict(sharing=s, **kw)[0].throughput for s in ("ps", "fcfs"))
    for w in (0.0, 0.25, 1.0):
        got = predict(sharing="hybrid", fcfs_weight=w, **kw)[0].throughput
        assert got == pytest.approx((1 - w) * ps + w * fcfs, rel=1e-12)
        coarse = sync_ps([(COARSE, K)], BPS / 8, "hybrid", fcfs_weight=w).throughput
        assert got >= coarse * (1 - 1e-9)
        if w in (0.0, 1.0):
            assert got == pytest.approx(coarse, rel=1e-9)
    assert predict(**kw)[0].throughput == pytest.approx((ps + fcfs) / 2, rel=1e-12)  # 0.5


def test_bad_fcfs_weight_is_a_config_error():
    with pytest.raises(ConfigError, match="fcfs-weight"):
        predict(coarse=COARSE, workers=2, mode="sync", fcfs_weight=1.5)


def test_cli_uses_the_hardware_files_weight_and_allreduce_bandwidth(tmp_path, capsys):
    hw = tmp_path / "hw.json"
    save_hardware(_hw(fcfs_weight=0.0, allreduce_bandwidth_bps=5e7), hw)
    base = ["predict", "--coarse", "size=2MB,fwd=20ms,bwd=40ms,batch=16", "--workers", "3",
            "--mode", "sync", "--format", "json", "--model", "coarse"]

    def run(*extra):
        assert cli_main([*base, *extra]) == 0
        return json.loads(capsys.readouterr().out)[0]["throughput"]

    expected_ps = sync_ps([(COARSE, 3)], 1e8 / 8, "ps").throughput
    assert run("--hardware", str(hw)) == pytest.approx(expected_ps, rel=1e-9)
    assert run("--hardware", str(hw), "--fcfs-weight", "0.5") == pytest.approx(
        sync_ps([(COARSE, 3)], 1e8 / 8, "hybrid").throughput, rel=1e-9)
    ring = run("--hardware", str(hw), "--arch", "allreduce")
    from sgdsim.analytic.sync import ring_allreduce
    assert ring == pytest.approx(ring_allreduce([(COARSE, 3)], 5e7 / 8).throughput, rel=1e-9)


def test_cli_errors_are_one_line(capsys):
    assert cli_main(["predict", "--coarse", "size=2MB,fwd=20ms,bwd=40ms,batch=16",
                     "--mode", "sync", "--fcfs-weight", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sgdsim: error:") and "fcfs-weight" in err and "\n" not in err
    assert cli_main(["netbench", "--local", "--fanout", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--lab" in err and "\n" not in err
