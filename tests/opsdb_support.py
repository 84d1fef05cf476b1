"""A real PostgreSQL server for the operator-database tests, started from initdb in a temporary
folder (as an unprivileged user when run as root: postgres refuses to run as root)."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager

USERS = ("postgres", "nobody")


def _pg(name: str) -> str | None:
    """A PostgreSQL program: on PATH, or where Debian's package puts it (not on PATH)."""
    found = shutil.which(name)
    if found:
        return found
    hits = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return hits[-1] if hits else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unprivileged_user() -> str | None:
    for user in USERS:
        try:
            pwd.getpwnam(user)
            return user
        except KeyError:
            continue
    return None


def why_no_postgres() -> str | None:
    """Why the PostgreSQL tests cannot run here, or None when they can."""
    if not (_pg("initdb") and _pg("pg_ctl")):
        return "PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql)"
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser to start PostgreSQL as another user"
    if os.geteuid() == 0 and _unprivileged_user() is None:
        return f"running as root and none of the users {', '.join(USERS)} exists to run PostgreSQL"
    return None


def _run(cmd: list[str], what: str, log: str | None = None) -> None:
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        tail = done.stderr.strip()
        if log and os.path.exists(log):
            with open(log, encoding="utf-8", errors="replace") as fh:
                tail += " | log: " + fh.read()[-500:]
        raise RuntimeError(f"{what} failed ({done.returncode}): {tail[-800:]}")


@contextmanager
def postgres_server():
    """Yields a postgresql+psycopg URL of a fresh server; stops and removes it afterwards."""
    user = _unprivileged_user() if os.geteuid() == 0 else None
    prefix = ["runuser", "-u", user, "--"] if user else []
    folder = tempfile.mkdtemp(prefix="sgdsim-pg-")
    os.chmod(folder, 0o755)
    if user:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    data, log, port = os.path.join(folder, "data"), os.path.join(folder, "log"), _free_port()
    try:
        _run(prefix + [_pg("initdb"), "-D", data, "-A", "trust", "-U", "sgdsim", "--no-sync"],
             "initdb")
        # -F: no fsync (a test server); -k: the unix socket in our folder, not /var/run.
        _run(prefix + [_pg("pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60", "-o",
                       f"-k {folder} -p {port} -h 127.0.0.1 -F", "start"], "pg_ctl start", log)
        yield f"postgresql+psycopg://sgdsim@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(prefix + [_pg("pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(folder, ignore_errors=True)
