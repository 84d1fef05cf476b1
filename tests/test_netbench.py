"""netbench: the α·size + β fit (exact oracle), hardware files, and a real loopback run."""
from __future__ import annotations

import argparse
import json
import socket
import threading
import time

import numpy as np
import pytest

from sgdsim.errors import ConfigError, ProfileError, SgdsimError
from sgdsim.lab.cli import main as lab_main
from sgdsim.lab.cli import register
from sgdsim.hardware import Fit, Hardware, fit_overhead, hardware_from, load_hardware, save_hardware
from sgdsim.lab.netbench import measure, parse_sizes, run_local, serve

SIZES = [2 ** k for k in range(10, 29, 2)]  # 1 KiB .. 256 MiB


# ----------------------------------------------------------------------------- fit

@pytest.mark.parametrize("alpha, beta", [(8e-9, 50e-6), (1 / 1.25e9, 0.0), (8e-11, 2e-3)])
def test_fit_recovers_exact_parameters(alpha, beta):
    times = [alpha * s + beta for s in SIZES]
    fit = fit_overhead(SIZES, times)
    assert fit.alpha_s_per_byte == pytest.approx(alpha, rel=1e-9)
    assert fit.beta_s == pytest.approx(beta, rel=1e-9, abs=1e-15)
    assert fit.bandwidth_bps == pytest.approx(8 / alpha, rel=1e-9)
    assert fit.max_rel_residual < 1e-9 and fit.r_squared == pytest.approx(1.0)


def test_fit_r_squared_matches_its_definition_on_a_noisy_line():
    rng = np.random.default_rng(7)
    times = [(8e-9 * s + 50e-6) * (1 + rng.normal(0, 0.2)) for s in SIZES]
    fit = fit_overhead(SIZES, times)
    predicted = [fit.alpha_s_per_byte * s + fit.beta_s for s in SIZES]
    t = np.asarray(times)
    r2 = 1 - np.sum((t - predicted) ** 2) / np.sum((t - t.mean()) ** 2)
    assert 0 < fit.r_squared < 1 and fit.r_squared == pytest.approx(r2, rel=1e-6)


def test_fit_two_points_is_the_line_through_them():
    fit = fit_overhead([1000, 3000], [0.002, 0.004])
    assert (fit.alpha_s_per_byte, fit.beta_s) == (pytest.approx(1e-6), pytest.approx(1e-3))


def test_fit_rejects_degenerate_data():
    with pytest.raises(ConfigError, match="two different message sizes"):
        fit_overhead([1000, 1000], [1.0, 1.0])
    with pytest.raises(ConfigError, match="do not grow with size"):
        fit_overhead([1000, 2000, 4000], [3.0, 2.0, 1.0])
    with pytest.raises(ConfigError, match="positive finite"):
        fit_overhead([1000, 2000], [0.0, 1.0])


def test_negative_beta_is_stored_as_zero_with_raw_value_kept():
    hw = hardware_from(Fit(1e-8, -2e-6, 0.1, 0.99), rtt_s=40e-6)
    assert hw.overhead_beta_s == 0.0 and hw.measured["fit_beta_s"] == -2e-6
    assert hw.latency_s == pytest.approx(20e-6) and hw.bandwidth_bps == pytest.approx(8e8)


def test_parse_sizes():
    assert parse_sizes("1KiB-1MiB") == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert parse_sizes("1KB-10KB") == [1000, 4000, 10000]
    assert parse_sizes("64KB,1KB,1KB") == [1000, 64000]
    for bad in ("1MiB-1KiB", "0", "x"):
        with pytest.raises(ConfigError):
            parse_sizes(bad)


# ----------------------------------------------------------------------------- hardware files

def _hw() -> Hardware:
    times = [8e-9 * s + 5e-5 for s in SIZES]
    return hardware_from(fit_overhead(SIZES, times), 60e-6,
                         {"sizes_bytes": SIZES, "median_s": times})


def test_hardware_round_trip(tmp_path):
    path = tmp_path / "hw.json"
    hw = _hw()
    save_hardware(hw, path)
    data = json.loads(path.read_text())
    assert data["format"] == "sgdsim-hardware" and data["version"] == 1
    assert data["bandwidth_bps"] == pytest.approx(1e9)
    back = load_hardware(path)
    assert back == hw and back.measured == json.loads(json.dumps(hw.measured))


def test_hardware_refuses_overwrite(tmp_path):
    path = tmp_path / "hw.json"
    path.write_text("precious")
    with pytest.raises(ConfigError, match="refusing to overwrite"):
        save_hardware(_hw(), path)
    assert path.read_text() == "precious"
    save_hardware(_hw(), path, force=True)
    assert load_hardware(path).bandwidth_bps == pytest.approx(1e9)


GOOD = {"format": "sgdsim-hardware", "version": 1, "bandwidth_bps": 1e9, "latency_s": 1e-5,
        "overhead_alpha_s_per_byte": 8e-9, "overhead_beta_s": 1e-5, "measured": {}}


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({**GOOD, "format": "sgdsim-profile"}), "format is 'sgdsim-profile'"),
    (json.dumps({**GOOD, "version": 2}), "unsupported version 2"),
    (json.dumps({**GOOD, "bandwidth_bps": -1}), "'bandwidth_bps' must be positive"),
    (json.dumps({**GOOD, "overhead_alpha_s_per_byte": 0}), "must be positive"),
    (json.dumps({**GOOD, "latency_s": True}), "'latency_s' must be a finite number"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "overhead_beta_s"}), "'overhead_beta_s'"),
    (json.dumps({**GOOD, "measured": [1]}), "'measured' must be an object"),
])
def test_malformed_hardware_file(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message) as err:
        load_hardware(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_missing_hardware_file(tmp_path):
    with pytest.raises(ProfileError, match="cannot read file"):
        load_hardware(tmp_path / "nope.json")


# ----------------------------------------------------------------------------- real TCP

def test_loopback_run_measures_every_size():
    # Only what holds on a loaded machine: how straight loopback's line is depends on the
    # machine's load (r² 0.85 on a busy CI box), so the fit's quality is checked on exact and
    # noisy synthetic lines above, not here.
    m = run_local(sizes="1KiB-16MiB", repeats=7, pings=20)
    assert m.sizes_bytes == parse_sizes("1KiB-16MiB") and all(t > 0 for t in m.median_s)
    assert m.repeats == [7] * len(m.sizes_bytes) and 0 < m.rtt_s < 0.01
    hw = m.hardware()
    assert m.median_s[-1] > m.median_s[0]  # 16 MiB takes longer than 1 KiB under any load
    assert hw.bandwidth_bps > 1e8  # loopback is Gbit/s-class even on a slow CI box
    assert hw.measured["sizes_bytes"] == m.sizes_bytes


def test_byte_budget_skips_the_largest_sizes():
    m = run_local(sizes="1KiB,64KiB,1MiB,8MiB", repeats=3, pings=5, max_bytes=4e6)
    assert m.sizes_bytes == [1024, 65536, 1048576] and m.repeats[-1] == 3
    assert m.skipped_bytes == [8 << 20]


def test_host_mode_against_an_in_process_server():
    ready = []
    t = threading.Thread(target=serve, args=("127.0.0.1", 0), daemon=True,
                         kwargs={"once": True, "announce": ready.append})
    t.start()
    deadline = time.time() + 5
    while not ready and time.time() < deadline:
        time.sleep(0.01)
    port = int(ready[0].split()[-1])
    m = measure("127.0.0.1", port, sizes="1KiB,256KiB,1MiB", repeats=2, pings=5)
    t.join(5)
    assert len(m.median_s) == 3 and m.target == f"127.0.0.1:{port}"


def test_client_refuses_a_foreign_server():
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def greet_wrong():
        conn, _ = srv.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.0\r\n")
        conn.close()

    threading.Thread(target=greet_wrong, daemon=True).start()
    with pytest.raises(SgdsimError, match="not a sgdsim netbench server"):
        measure("127.0.0.1", port, sizes="1KiB,2KiB")
    srv.close()


def test_client_reports_connection_refused_in_one_line():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed when we leave: nobody listens there
    with pytest.raises(SgdsimError, match="cannot connect to netbench server"):
        measure("127.0.0.1", port, connect_timeout=1)


# ----------------------------------------------------------------------------- command line

def test_register_contract():
    class P(argparse.ArgumentParser):
        pass

    parser = P(prog="sgdsim")
    cmds = register(parser.add_subparsers(dest="command", required=True, parser_class=P))
    assert set(cmds) == {"netbench", "lab"}
    args = parser.parse_args(["lab", "up", "--hosts", "4", "--bandwidth", "50Mbps"])
    assert (args.command, args.lab_command, args.hosts, args.bandwidth) == ("lab", "up", 4, "50Mbps")
    assert args.lab_cmd is cmds["lab"]
    args = parser.parse_args(["netbench", "--host", "h", "--port", "9", "--repeats", "2"])
    assert args.lab_cmd is cmds["netbench"] and (args.host, args.port) == ("h", 9)


def test_cli_writes_hardware_and_refuses_overwrite(tmp_path, capsys):
    out = tmp_path / "hw.json"
    argv = ["netbench", "--local", "--sizes", "64KiB-16MiB", "--repeats", "3", "--pings", "5",
            "-o", str(out)]
    assert lab_main(argv) == 0
    assert "bandwidth" in capsys.readouterr().out
    assert load_hardware(out).bandwidth_bps > 0
    assert lab_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sgdsim: error:") and "refusing to overwrite" in err and "\n" not in err
    assert lab_main(argv + ["--force", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "sgdsim-hardware"
