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
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time

from ..errors import ConfigError, SgdsimError
from ..units import format_bps, parse_bandwidth_bps, parse_duration_s, parse_size_bytes
from .procs import stop

PREFIX = "sgdsim-"
SUBNET = "10.77.0"
STATE_FORMAT = "sgdsim-lab"
DEFAULT_QUEUE_LATENCY_S = 0.05


def state_path() -> str:
    """``$SGDSIM_LAB_STATE`` or ``/run/sgdsim-lab.json`` (/run is cleared at boot, like the lab)."""
    return os.environ.get("SGDSIM_LAB_STATE", "/run/sgdsim-lab.json")


def default_burst_bytes(bandwidth_bps: float) -> int:
    """1 ms worth of tokens, at least 16 KiB.

    Small, so a transfer of a few MB is not sped up by a free initial burst (16 KiB is < 3 %
    of 1 MB at 50 Mbit/s) and so short bursts cannot overrun a shared link; 1 ms of the rate
    keeps the token refills coarse enough at 10 Gbit/s for the qdisc timer not to cap the rate.
    """
    return max(16 * 1024, int(bandwidth_bps / 8 * 1e-3))


def check_prerequisites() -> None:
    if os.geteuid() != 0:
        raise ConfigError("the lab needs root (network namespaces, veth, tc): run it as root, "
                          "e.g. sudo sgdsim lab up --hosts 3 --bandwidth 100Mbps")
    missing = [c for c in ("ip", "tc") if shutil.which(c) is None]
    if missing:
        raise ConfigError(f"the lab needs the {' and '.join(missing)} command(s): "
                          "apt-get install iproute2")


def _cmd(argv: list[str], timeout: float = 30.0) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SgdsimError(f"{' '.join(argv)}: {exc}") from None
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise SgdsimError(f"{' '.join(argv)}: {lines[-1] if lines else f'exit code {r.returncode}'}")
    return r.stdout


def list_namespaces(prefix: str = PREFIX) -> list[str]:
    """Network namespaces named ``prefix*`` (``ip netns list`` prints 'name (id: n)')."""
    out = _cmd(["ip", "netns", "list"])
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return sorted(n for n in names if n.startswith(prefix))


def read_state(path: str | None = None) -> dict | None:
    path = path or state_path()
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"lab state file {path} is unreadable ({exc}); remove it after "
                          "checking 'ip netns list'") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise ConfigError(f"{path} is not a sgdsim lab state file")
    return data


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
        return _cmd(self._nsexec(i, argv), timeout=timeout)

    # -------------------------------------------------------------- life cycle
    def up(self) -> "LabCluster":
        check_prerequisites()
        trapped = not self._old_handlers and self._trap_signals()
        try:
            with _locked(self.state_file):
                self._refuse_clobber()
                try:
                    self._save_state(complete=False)
                    self._build()
                    self._save_state(complete=True)
                except BaseException:  # also Ctrl-C, SIGTERM, SIGHUP: never leave half a lab
                    self._teardown()
                    _remove_lock(self.state_file)
                    raise
        finally:
            if trapped:
                self._restore_signals()
        return self

    def down(self) -> list[str]:
        """Remove what this lab created; returns the namespaces deleted."""
        if not self.owned or not self._created:
            return []  # never up, or down already: the state file may be another lab's now
        with _locked(self.state_file):
            removed = self._teardown()
        _remove_lock(self.state_file)
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
        _cmd(["ip", "netns", "add", name])

    def _build(self) -> None:
        sw = self.switch
        self._add_namespace(sw)
        _cmd(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        _cmd(["ip", "-n", sw, "link", "set", "br0", "up"])
        for i in range(self.hosts):
            ns = self.namespace(i)
            self._add_namespace(ns)
            _cmd(["ip", "link", "add", "eth0", "netns", ns, "type", "veth",
                  "peer", "name", f"p{i}", "netns", sw])
            _cmd(["ip", "-n", sw, "link", "set", f"p{i}", "master", "br0", "up"])
            _cmd(["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"])
            _cmd(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _cmd(["ip", "-n", ns, "link", "set", "lo", "up"])
            self._shape(ns, "eth0")      # what host i sends
            self._shape(sw, f"p{i}")     # what host i receives

    def _shape(self, ns: str, dev: str) -> None:
        _cmd(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf",
              "rate", f"{self.bandwidth_bps:.0f}bit", "burst", str(self.burst_bytes),
              "latency", f"{self.queue_latency_s * 1e6:.0f}us"])

    def _save_state(self, complete: bool) -> None:
        data = {"format": STATE_FORMAT, "version": 1, "complete": complete,
                "hosts": self.hosts, "bandwidth_bps": self.bandwidth_bps,
                "burst_bytes": self.burst_bytes, "queue_latency_s": self.queue_latency_s,
                "prefix": self.prefix, "subnet": self.subnet, "switch": self.switch,
                "namespaces": self._created, "owner_pid": os.getpid(), "created": time.time()}
        tmp = f"{self.state_file}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, self.state_file)
        except OSError as exc:
            raise ConfigError(f"cannot write lab state file {self.state_file}: "
                              f"{exc.strerror or exc}") from None

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


@contextlib.contextmanager
def _locked(state_file: str):
    """Serialises lab up/down across processes, so a down cannot race a half-built up."""
    try:
        fd = os.open(f"{state_file}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot lock {state_file}.lock: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_lock(state_file: str) -> None:
    """Nothing of a lab stays behind in /run once it is down."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{state_file}.lock")


def teardown(namespaces: list[str], state_file: str, procs=()) -> list[str]:
    """Stop what runs in ``namespaces``, delete them, then the state file.

    Goes on after errors (and ignores Ctrl-C meanwhile) so one stuck step cannot leave the rest
    behind; raises one line at the end if something could not be removed.
    """
    old = _ignore_sigint()
    errors, removed = [], []
    try:
        for p in procs:
            stop(p, timeout_s=3.0)
        existing = set(list_namespaces(""))
        for ns in reversed(namespaces):
            if ns not in existing:
                continue
            _kill_inside(ns)
            try:
                _cmd(["ip", "netns", "del", ns])
                removed.append(ns)
            except SgdsimError as exc:
                errors.append(str(exc))
        if not errors and os.path.exists(state_file):
            os.unlink(state_file)
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
    if errors:
        raise SgdsimError(f"lab teardown incomplete: {errors[0]}")
    return removed


def _ignore_sigint():
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)




def _kill_inside(ns: str) -> None:
    """Processes left in a namespace keep its veth alive after 'ip netns del': end them."""
    try:
        pids = [int(p) for p in _cmd(["ip", "netns", "pids", ns]).split()]
    except (SgdsimError, ValueError):
        return
    pids = [p for p in pids if p != os.getpid()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.05)
        if not pids:
            return


def _alive(pid: int) -> bool:
    """A zombie has left its namespace already; only its parent can reap it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def lab_down(state_file: str | None = None) -> list[str]:
    """Tear down the lab recorded in the state file (nothing else); returns what was deleted."""
    check_prerequisites()
    path = state_file or state_path()
    with _locked(path):
        st = read_state(path)
        removed = teardown(list(st.get("namespaces", [])), path) if st else []
    _remove_lock(path)
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
            st["qdiscs"][n] = _cmd(["tc", "-n", n, "qdisc", "show"]).strip().splitlines()
        except SgdsimError as exc:
            st["qdiscs"][n] = [str(exc)]
    return st
