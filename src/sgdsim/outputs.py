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
    if os.path.isdir(path):
        raise ConfigError(f"cannot write {path}: it is a folder")
    if os.path.exists(path) and not force:
        raise exists_error(f"{path} exists; refusing to overwrite (use --force)")
