"""Network-namespace plumbing under ``LabCluster``: ``ip``/``tc`` commands and teardown.

Every failure of a command is one ``SgdsimError`` line; ``teardown`` removes what a lab
created even when some of it is already gone or stuck.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

from ..errors import ConfigError, SgdsimError
from .procs import stop

PREFIX = "sgdsim-"


def check_prerequisites() -> None:
    if os.geteuid() != 0:
        raise ConfigError("the lab needs root (network namespaces, veth, tc): run it as root, "
                          "e.g. sudo sgdsim lab up --hosts 3 --bandwidth 100Mbps")
    missing = [c for c in ("ip", "tc") if shutil.which(c) is None]
    if missing:
        raise ConfigError(f"the lab needs the {' and '.join(missing)} command(s): "
                          "apt-get install iproute2")


def run_cmd(argv: list[str], timeout: float = 30.0) -> str:
    """``argv``'s stdout; failure → one line naming the command and its last error line."""
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
    out = run_cmd(["ip", "netns", "list"])
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return sorted(n for n in names if n.startswith(prefix))


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
                run_cmd(["ip", "netns", "del", ns])
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
        pids = [int(p) for p in run_cmd(["ip", "netns", "pids", ns]).split()]
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
