"""The one check every command runs before writing a file the user names."""
from __future__ import annotations

import os

from .errors import ConfigError


def check_output_path(path: str, force: bool, exists_error: type[Exception] = ConfigError) -> None:
    """Refuse, in one line, a path whose folder is missing, that is a folder, or that exists
    (unless ``force``): checked before any work, so nothing a user saved is lost."""
    if not str(path).strip():
        raise ConfigError("an output file name is empty")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise ConfigError(f"cannot write {path}: folder {folder} does not exist")
    _check_name(path, folder)
    if os.path.isdir(path):
        raise ConfigError(f"cannot write {path}: it is a folder")
    if os.path.exists(path) and not force:
        raise exists_error(f"{path} exists; refusing to overwrite (use --force)")


def _check_name(path, folder: str) -> None:
    """A name the system can create in ``folder``: no NUL byte, not longer than the file
    system allows (open() would raise), in a folder this user may write to."""
    name = os.fsencode(os.path.basename(os.fspath(path)))
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    shown = str(path) if len(str(path)) <= 60 else f"{str(path)[:40]}...{str(path)[-12:]}"
    if b"\0" in name:
        raise ConfigError(f"cannot write {shown!r}: the name holds a NUL byte")
    if len(name) > limit:
        raise ConfigError(f"cannot write {shown}: the name is {len(name)} bytes long, the "
                          f"file system allows {limit}")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"cannot write {shown}: folder {folder} is not writable")


def check_distinct_outputs(*named: tuple[str, str | os.PathLike | None]) -> None:
    """Refuse, in one line and before any work, two outputs of one run that name the same
    file (the second would overwrite the first): ``("--report", path), ("--timeline", path)``.
    An option not given (None) is skipped; paths compare after ``.``, ``..`` and links."""
    seen: dict[str, str] = {}
    for option, path in named:
        if path is None or not str(path).strip():
            continue  # not given; an empty name is check_output_path's to refuse
        key = _identity(path)
        if key in seen:
            raise ConfigError(f"{seen[key]} and {option} both name {path}: one would overwrite "
                              "the other; give each its own file")
        seen[key] = option


def _identity(path) -> str:
    """What two names of one file share: the resolved absolute path (the raw text where the
    name cannot be resolved, e.g. it holds a NUL byte)."""
    try:
        return os.path.normcase(os.path.realpath(os.fspath(path)))
    except (OSError, ValueError, TypeError):
        return str(path)
