"""Child processes of lab commands: stopping them, and the line that says why one failed."""
from __future__ import annotations

import subprocess

from ..errors import SgdsimError
from .child_error import cause_line


def stop(proc: subprocess.Popen, timeout_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill_all(procs) -> None:
    """SIGKILL whatever is still running (benchmark helpers hold no state worth a clean exit)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def last_line(text: str | None) -> str:
    """Why a benchmark's child failed, from its stderr: its last exception line, not the torch
    warnings logged after it (``child_error``)."""
    return cause_line(text)


def hub_and_peers(lab, hub_argv: list[str], ready: str, what: str, peer_argv, peers: int,
                  timeout_s: float) -> str:
    """Run a measurement hub on lab host 0 and ``peer_argv(port)`` on hosts 1..peers; the
    hub's stdout once it exits (its JSON), or one line saying why it failed."""
    hub, port = start_hub(lab, hub_argv, ready, what)
    procs = [hub]
    try:
        for i in range(1, peers + 1):
            procs.append(lab.popen(i, peer_argv(port), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE))
        out, err = hub.communicate(timeout=timeout_s)
        if hub.returncode != 0:
            raise SgdsimError(f"{what} hub failed: {last_line(err)}")
        return out
    finally:
        kill_all(procs)


def start_hub(lab, argv: list[str], ready: str, what: str) -> tuple[subprocess.Popen, str]:
    """Start a measurement hub on lab host 0 and wait for its ``ready ... PORT`` line."""
    hub = lab.popen(0, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = hub.stdout.readline()
    if not line.startswith(ready):
        kill_all([hub])
        raise SgdsimError(f"{what} hub did not start: {hub.stderr.read().strip()[-200:]}")
    return hub, line.split()[-1]
