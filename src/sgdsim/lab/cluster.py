"""An emulated cluster on one machine: network namespaces joined by a shaped bridge.

Topology (``N`` hosts, default prefix ``sgdsim-``)::

    sgdsim-h0 [eth0 10.77.0.1/24] ==veth== [p0] \\
    sgdsim-h1 [eth0 10.77.0.2/24] ==veth== [p1]  >- br0, in namespace sgdsim-sw
    ...                                          /

Every host's NIC is shaped by a token bucket (tc tbf) in both directions: egress of ``eth0``
inside the host (what it sends) and egress of ``p<i>`` in the switch (what it receives). So,
as in the simulator, each NIC direction is its own link and the parameter server's downlink
is shared by all workers sending to it. Nothing is created in the root namespace: deleting
the namespaces deletes every veth and the bridge with them.

The ``ip``/``tc`` plumbing lives in ``netns``, the state file and its lock in ``state``; their
public names are re-exported here, where callers have always imported them.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from ..errors import ConfigError, SgdsimError
from ..units import format_bps, parse_bandwidth_bps, parse_duration_s, parse_size_bytes
from .netns import PREFIX, check_prerequisites, list_namespaces, run_cmd, teardown
from .state import STATE_FORMAT, locked, read_state, remove_lock, state_path, write_state

__all__ = ["DEFAULT_QUEUE_LATENCY_S", "LabCluster", "PREFIX", "STATE_FORMAT", "SUBNET",
           "check_prerequisites", "default_burst_bytes", "lab_down", "lab_status",
           "list_namespaces", "read_state", "state_path", "teardown"]

SUBNET = "10.77.0"
DEFAULT_QUEUE_LATENCY_S = 0.05


def default_burst_bytes(bandwidth_bps: float) -> int:
    """1 ms worth of tokens, at least 16 KiB.

    Small, so a transfer of a few MB is not sped up by a free initial burst (16 KiB is < 3 %
    of 1 MB at 50 Mbit/s) and so short bursts cannot overrun a shared link; 1 ms of the rate
    keeps the token refills coarse enough at 10 Gbit/s for the qdisc timer not to cap the rate.
    """
    return max(16 * 1024, int(bandwidth_bps / 8 * 1e-3))


class LabCluster:
    """``with LabCluster(hosts=3, bandwidth_bps=1e8) as lab: lab.run(1, [...])``.

    ``up()``/``down()`` for manual control; leaving the ``with`` block (normally, by an
    exception, Ctrl-C, SIGTERM or SIGHUP) always tears the lab down. ``attach()`` gives a
    handle on a lab started elsewhere (``sgdsim lab up``) that never tears it down.
    """

    def __init__(self, hosts: int, bandwidth_bps: float | str, *, burst_bytes=None,
                 queue_latency_s=DEFAULT_QUEUE_LATENCY_S, state_file: str | None = None,
                 prefix: str = PREFIX, subnet: str = SUBNET):
        self.hosts = int(hosts)
        if not 2 <= self.hosts <= 250:
            raise ConfigError(f"a lab has 2 to 250 hosts, got {hosts}")
        self.bandwidth_bps = parse_bandwidth_bps(bandwidth_bps)
        self.burst_bytes = int(parse_size_bytes(burst_bytes) if burst_bytes is not None
                               else default_burst_bytes(self.bandwidth_bps))
        self.queue_latency_s = parse_duration_s(queue_latency_s)
        if self.burst_bytes < 2048 or self.queue_latency_s <= 0:
            raise ConfigError("tbf burst must be at least 2KiB and the queue latency positive")
        self.state_file = state_file or state_path()
        self.prefix, self.subnet = prefix, subnet
        self.owned = True
        self._created: list[str] = []
        self._procs: list[subprocess.Popen] = []
        self._old_handlers: dict = {}

    # -------------------------------------------------------------- names
    @property
    def switch(self) -> str:
        return f"{self.prefix}sw"

    def namespace(self, i: int) -> str:
        if not 0 <= i < self.hosts:
            raise ConfigError(f"lab host index {i} out of range 0..{self.hosts - 1}")
        return f"{self.prefix}h{i}"

    def address(self, i: int) -> str:
        self.namespace(i)
        return f"{self.subnet}.{i + 1}"

    # -------------------------------------------------------------- running things inside
    def _nsexec(self, i: int, argv) -> list[str]:
        if isinstance(argv, str):
            raise ConfigError("pass the command as a list of arguments, not a string")
        return ["ip", "netns", "exec", self.namespace(i), *map(str, argv)]

    def run(self, i: int, argv, **kwargs) -> subprocess.CompletedProcess:
        """``subprocess.run`` of ``argv`` inside host ``i``."""
        return subprocess.run(self._nsexec(i, argv), **kwargs)

    def popen(self, i: int, argv, **kwargs) -> subprocess.Popen:
        """``subprocess.Popen`` inside host ``i``; still running at teardown → terminated."""
        proc = subprocess.Popen(self._nsexec(i, argv), **kwargs)
        self._procs = [p for p in self._procs if p.poll() is None] + [proc]
        return proc

    def exec(self, i: int, argv, timeout: float = 60.0) -> str:
        """Run ``argv`` inside host ``i`` and return its stdout; failure → one-line error."""
        return run_cmd(self._nsexec(i, argv), timeout=timeout)

    # -------------------------------------------------------------- life cycle
    def up(self) -> "LabCluster":
        check_prerequisites()
        trapped = not self._old_handlers and self._trap_signals()
        try:
            with locked(self.state_file):
                self._refuse_clobber()
                try:
                    self._save_state(complete=False)
                    self._build()
                    self._save_state(complete=True)
                except BaseException:  # also Ctrl-C, SIGTERM, SIGHUP: never leave half a lab
                    self._teardown()
                    remove_lock(self.state_file)
                    raise
        finally:
            if trapped:
                self._restore_signals()
        return self

    def down(self) -> list[str]:
        """Remove what this lab created; returns the namespaces deleted."""
        if not self.owned or not self._created:
            return []  # never up, or down already: the state file may be another lab's now
        with locked(self.state_file):
            removed = self._teardown()
        remove_lock(self.state_file)
        return removed

    def _teardown(self) -> list[str]:
        removed = teardown(self._created, self.state_file, self._procs)
        self._created = []
        return removed

    def __enter__(self) -> "LabCluster":
        self._trap_signals()
        try:
            return self.up()
        except BaseException:
            self._restore_signals()
            raise

    def __exit__(self, *exc) -> None:
        try:
            self.down()
        finally:
            self._restore_signals()

    @classmethod
    def attach(cls, state_file: str | None = None) -> "LabCluster":
        path = state_file or state_path()
        st = read_state(path)
        if st is None or not st.get("complete"):
            raise ConfigError(f"no lab is up (no complete state file {path}); start one with "
                              "'sgdsim lab up --hosts 3 --bandwidth 100Mbps'")
        lab = cls(st["hosts"], st["bandwidth_bps"], burst_bytes=st["burst_bytes"],
                  queue_latency_s=st["queue_latency_s"], state_file=path,
                  prefix=st["prefix"], subnet=st["subnet"])
        lab.owned, lab._created = False, list(st["namespaces"])
        return lab

    # -------------------------------------------------------------- internals
    def _refuse_clobber(self) -> None:
        st = read_state(self.state_file)
        ours = set(st["namespaces"]) if st else set()
        existing = list_namespaces(self.prefix)
        if st and ours & set(existing):
            raise ConfigError(f"a lab is already up ({st['hosts']} hosts, state file "
                              f"{self.state_file}); run 'sgdsim lab down' first")
        foreign = [n for n in existing if n not in ours]
        if foreign:
            raise ConfigError(f"namespaces {', '.join(foreign)} exist but were not created by "
                              f"sgdsim lab; remove them first ('ip netns del NAME')")
        if st:  # stale state of a lab that is gone (reboot, manual cleanup)
            os.unlink(self.state_file)

    def _add_namespace(self, name: str) -> None:
        # recorded before creation: if we die in between, 'lab down' still finds it
        self._created.append(name)
        self._save_state(complete=False)
        run_cmd(["ip", "netns", "add", name])

    def _build(self) -> None:
        sw = self.switch
        self._add_namespace(sw)
        run_cmd(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        run_cmd(["ip", "-n", sw, "link", "set", "br0", "up"])
        for i in range(self.hosts):
            ns = self.namespace(i)
            self._add_namespace(ns)
            run_cmd(["ip", "link", "add", "eth0", "netns", ns, "type", "veth",
                  "peer", "name", f"p{i}", "netns", sw])
            run_cmd(["ip", "-n", sw, "link", "set", f"p{i}", "master", "br0", "up"])
            run_cmd(["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"])
            run_cmd(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run_cmd(["ip", "-n", ns, "link", "set", "lo", "up"])
            self._shape(ns, "eth0")      # what host i sends
            self._shape(sw, f"p{i}")     # what host i receives

    def _shape(self, ns: str, dev: str) -> None:
        run_cmd(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf",
              "rate", f"{self.bandwidth_bps:.0f}bit", "burst", str(self.burst_bytes),
              "latency", f"{self.queue_latency_s * 1e6:.0f}us"])

    def _save_state(self, complete: bool) -> None:
        data = {"format": STATE_FORMAT, "version": 1, "complete": complete,
                "hosts": self.hosts, "bandwidth_bps": self.bandwidth_bps,
                "burst_bytes": self.burst_bytes, "queue_latency_s": self.queue_latency_s,
                "prefix": self.prefix, "subnet": self.subnet, "switch": self.switch,
                "namespaces": self._created, "owner_pid": os.getpid(), "created": time.time()}
        write_state(self.state_file, data)

    def _trap_signals(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False  # only the main thread may set handlers; Ctrl-C still works there

        def _exit(signum, _frame):
            raise SystemExit(128 + signum)  # unwinds through __exit__, which tears down

        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, _exit)
        return True

    def _restore_signals(self) -> None:
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._old_handlers.clear()

    def describe(self) -> str:
        return (f"{self.hosts} hosts {self.prefix}h0..h{self.hosts - 1} at "
                f"{self.subnet}.1..{self.hosts}, {format_bps(self.bandwidth_bps)} per NIC direction "
                f"(tbf burst {self.burst_bytes} B, queue {self.queue_latency_s * 1e3:g} ms)")


def lab_down(state_file: str | None = None) -> list[str]:
    """Tear down the lab recorded in the state file (nothing else); returns what was deleted."""
    check_prerequisites()
    path = state_file or state_path()
    with locked(path):
        st = read_state(path)
        removed = teardown(list(st.get("namespaces", [])), path) if st else []
    remove_lock(path)
    return removed


def lab_status(state_file: str | None = None) -> dict | None:
    """The state file plus what exists now and the qdiscs actually installed."""
    check_prerequisites()
    st = read_state(state_file or state_path())
    if st is None:
        return None
    existing = set(list_namespaces(""))
    st["present"] = [n for n in st["namespaces"] if n in existing]
    st["qdiscs"] = {}
    for n in st["present"]:
        try:
            st["qdiscs"][n] = run_cmd(["tc", "-n", n, "qdisc", "show"]).strip().splitlines()
        except SgdsimError as exc:
            st["qdiscs"][n] = [str(exc)]
    return st
