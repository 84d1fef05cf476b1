"""The emulated cluster: namespaces, shaping, teardown. Needs root and iproute2 (else skipped).

Every test uses its own state file (``SGDSIM_LAB_STATE``) and refuses to run while any
``sgdsim-*`` namespace exists, so a lab someone is using is never touched.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from sgdsim.errors import ConfigError, SgdsimError

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"),
    reason="the lab needs root and iproute2 (ip, tc)")

from sgdsim.lab.cli import main as lab_main  # noqa: E402
from sgdsim.lab.cluster import LabCluster, list_namespaces  # noqa: E402
from sgdsim.lab.netbench import run_lab  # noqa: E402

FOREIGN = "sgdsim-foreign-test"


def _root_links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return [line.split(":")[1].strip() for line in out.splitlines() if "sgdsim" in line]


def _assert_clean(state_file) -> None:
    assert list_namespaces() == []
    assert _root_links() == []
    assert not os.path.exists(state_file)
    assert not os.path.exists(f"{state_file}.lock")  # nothing of the lab left in /run


@pytest.fixture
def state(tmp_path, monkeypatch):
    if list_namespaces():
        pytest.skip(f"sgdsim- namespaces exist ({', '.join(list_namespaces())}); not touching them")
    path = tmp_path / "lab.json"
    monkeypatch.setenv("SGDSIM_LAB_STATE", str(path))
    yield path
    for ns in list_namespaces():  # a failed test must not leak into the next one
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.lab
def test_up_ping_shaped_bandwidth_down(state, capsys):
    assert lab_main(["lab", "up", "--hosts", "2", "--bandwidth", "50Mbps"]) == 0
    try:
        assert list_namespaces() == ["sgdsim-h0", "sgdsim-h1", "sgdsim-sw"]
        lab = LabCluster.attach()
        assert lab.address(1) == "10.77.0.2"
        assert "10.77.0.2/24" in lab.exec(1, ["ip", "-o", "addr", "show", "eth0"])
        _ping(lab, 1, lab.address(0))
        # a few MB: the 2 MiB transfers dominate α; tbf counts Ethernet+IP+TCP headers, so the
        # goodput is 1448/1514 = 95.6 % of the configured rate
        m = run_lab(0, 1, sizes="16KiB,256KiB,2MiB", repeats=3, pings=10, max_bytes=2e7)
        bw = m.hardware().bandwidth_bps
        assert 0.75 * 50e6 <= bw <= 1.25 * 50e6, bw
        assert 8 * m.sizes_bytes[-1] / m.median_s[-1] == pytest.approx(50e6, rel=0.25)
        assert lab_main(["lab", "status"]) == 0
        assert "rate 50Mbit" in capsys.readouterr().out
    finally:
        assert lab_main(["lab", "down"]) == 0
    _assert_clean(state)
    assert lab_main(["lab", "down"]) == 0  # nothing to do is not an error
    assert "no lab was up" in capsys.readouterr().out


def _ping(lab: LabCluster, i: int, address: str) -> None:
    if shutil.which("ping"):
        lab.exec(i, ["ping", "-c", "1", "-W", "2", address])
    else:  # no iputils: a TCP connection attempt that is refused proves reachability too
        code = f"import socket\ntry: socket.create_connection(({address!r}, 9), 2)\nexcept ConnectionRefusedError: pass"
        lab.exec(i, [sys.executable, "-c", code])


def test_refuses_to_clobber_foreign_namespace(state):
    subprocess.run(["ip", "netns", "add", FOREIGN], check=True)
    try:
        with pytest.raises(ConfigError, match=FOREIGN) as err:
            LabCluster(hosts=2, bandwidth_bps=1e8).up()
        assert "\n" not in str(err.value)
        assert list_namespaces() == [FOREIGN]  # ours were not created, theirs not touched
        assert lab_main(["lab", "down"]) == 0 and list_namespaces() == [FOREIGN]
    finally:
        subprocess.run(["ip", "netns", "del", FOREIGN], check=True)
    _assert_clean(state)


def test_refuses_second_lab_and_down_twice_is_harmless(state):
    with LabCluster(hosts=2, bandwidth_bps=1e8) as lab:
        with pytest.raises(ConfigError, match="already up"):
            LabCluster(hosts=3, bandwidth_bps=1e8).up()
        assert lab.down() == ["sgdsim-h1", "sgdsim-h0", "sgdsim-sw"]
        _assert_clean(state)
        with LabCluster(hosts=2, bandwidth_bps=1e8):
            assert lab.down() == []  # the first lab is gone: it must not touch the second
            assert len(list_namespaces()) == 3
    _assert_clean(state)


def test_teardown_after_exception_in_context(state):
    with pytest.raises(RuntimeError, match="boom"):
        with LabCluster(hosts=2, bandwidth_bps="100Mbps") as lab:
            sleeper = lab.popen(0, ["sleep", "60"])
            assert len(list_namespaces()) == 3
            raise RuntimeError("boom")
    assert sleeper.poll() is not None  # processes started in the lab do not outlive it
    _assert_clean(state)


@pytest.mark.parametrize("exc", [SgdsimError("tc failed"), KeyboardInterrupt()])
def test_teardown_on_failure_midway(state, monkeypatch, exc):
    calls = []

    def failing_shape(self, ns, dev):
        calls.append(dev)
        if len(calls) == 3:  # second host, half built
            raise exc

    monkeypatch.setattr(LabCluster, "_shape", failing_shape)
    with pytest.raises(type(exc)):
        LabCluster(hosts=3, bandwidth_bps=1e8).up()
    _assert_clean(state)


def test_sigterm_tears_down_the_context_manager(state):
    script = textwrap.dedent("""
        import time
        from sgdsim.lab import LabCluster
        with LabCluster(hosts=2, bandwidth_bps=1e8) as lab:
            print("up", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    _assert_clean(state)


def test_errors_without_prerequisites(state, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(ConfigError, match="needs root"):
        LabCluster(hosts=2, bandwidth_bps=1e8).up()
    monkeypatch.undo()
    monkeypatch.setenv("SGDSIM_LAB_STATE", str(state))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match="iproute2"):
        LabCluster(hosts=2, bandwidth_bps=1e8).up()


def test_bad_configurations():
    with pytest.raises(ConfigError, match="2 to 250 hosts"):
        LabCluster(hosts=1, bandwidth_bps=1e8)
    with pytest.raises(ConfigError, match="bandwidth"):
        LabCluster(hosts=2, bandwidth_bps="fast")
    with pytest.raises(ConfigError, match="out of range"):
        LabCluster(hosts=2, bandwidth_bps=1e8).address(2)
