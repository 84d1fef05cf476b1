"""The lab's state file (what ``sgdsim lab up`` created, for ``down``, ``status`` and
``attach``) and the lock that serialises lab up/down across processes."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os

from ..errors import ConfigError

STATE_FORMAT = "sgdsim-lab"


def state_path() -> str:
    """``$SGDSIM_LAB_STATE`` or ``/run/sgdsim-lab.json`` (/run is cleared at boot, like the lab)."""
    return os.environ.get("SGDSIM_LAB_STATE", "/run/sgdsim-lab.json")


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


def write_state(path: str, data: dict) -> None:
    """Through a temporary file, so a reader never sees half a state file."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write lab state file {path}: "
                          f"{exc.strerror or exc}") from None


@contextlib.contextmanager
def locked(state_file: str):
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


def remove_lock(state_file: str) -> None:
    """Nothing of a lab stays behind in /run once it is down."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{state_file}.lock")
