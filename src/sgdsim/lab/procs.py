"""Child processes of lab commands: stopping them, and the line that says why one failed."""
from __future__ import annotations

import subprocess

from ..errors import SgdsimError


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
    """The last non-empty line of a child's stderr: its error message."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def start_hub(lab, argv: list[str], ready: str, what: str) -> tuple[subprocess.Popen, str]:
    """Start a measurement hub on lab host 0 and wait for its ``ready ... PORT`` line."""
    hub = lab.popen(0, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = hub.stdout.readline()
    if not line.startswith(ready):
        kill_all([hub])
        raise SgdsimError(f"{what} hub did not start: {hub.stderr.read().strip()[-200:]}")
    return hub, line.split()[-1]
