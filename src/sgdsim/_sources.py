"""What the compiled core was built from: a hash of its sources, taken by the build
(``build_core.py``, which loads this file alone, without the package) and again at import
(``sgdsim.compiled``), so a core edited since its build is never run as its old self."""
from __future__ import annotations

import hashlib
import os


def sources_sha256(package_dir: str, paths) -> str:
    h = hashlib.sha256()
    for path in paths:
        with open(os.path.join(package_dir, path), "rb") as f:
            h.update(path.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()
