"""The simulator core, compiled at install or run as plain Python.

The core (``heap``, ``kernel``, ``flows``, ``stalls``, ``sharing/``, ``links``, ``streams``,
``engine`` and the MVA recursion) is written in a restricted style: flat arrays, scalars, the
typed tuples below, functions marked ``@core``. ``build_core.py`` (at the repository root,
run by ``pip install``) turns those sources into one Cython module, ``sgdsim._core``,
compiled by the C compiler: the source read here is the source compiled, so the two paths give
the same answers (``tests/test_compiled_core.py``). ``SGDSIM_PURE_PYTHON=1`` forces the
pure-Python path.

Annotations are what the build reads: ``int`` is a C int64, ``float`` a double, ``bool`` a
C truth value, ``I64``/``F64`` a contiguous int64/float64 array, a typed tuple its class.
"""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np

from ._sources import sources_sha256

I64 = np.ndarray  # an int64 array (a list on the pure-Python path)
F64 = np.ndarray  # a float64 array

_FORCE_PURE = os.environ.get("SGDSIM_PURE_PYTHON", "") not in ("", "0")


def core(fn):
    """A function of the compiled core (compiled into ``_core``; as written on the pure path)."""
    return fn


def core_inline(fn):
    """A core function the C compiler is asked to inline: the engine's event handlers."""
    return fn


def _load():
    """The compiled module, or None (with the reason) when the pure-Python path must run."""
    if _FORCE_PURE:
        return None, ""
    try:  # (by name: `from . import _core` would read as an import of the whole package)
        _core = importlib.import_module(__package__ + "._core")
    except ImportError:  # a source checkout that was never built
        return None, "is missing"
    try:
        current = sources_sha256(os.path.dirname(os.path.abspath(__file__)), _core.SOURCES)
    except OSError:  # an install without its .py sources: nothing to compare against
        return _core, ""
    if current != _core.SOURCES_SHA256 and _regenerated_sha256() != _core.CORE_SHA256:
        return None, "is older than its sources"  # running it would run the old code
    return _core, ""


def _regenerated_sha256() -> str | None:
    """The core as the edited sources would build it (a source checkout has build_core.py)."""
    import hashlib
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build_core.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("_sgdsim_build_core", path)
    build = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(build)
        return hashlib.sha256(build.generate_body().encode()).hexdigest()
    except Exception:  # noqa: BLE001 - a core that does not even generate is not the built one
        return None


CORE, _WHY_PURE = _load()
HAVE_COMPILED = CORE is not None
_warned = False


def warn_if_pure() -> None:
    """Without the compiled core a simulation runs 30-100× slower: say why, once."""
    global _warned
    if not _WHY_PURE or _warned:
        return
    _warned = True
    print(f"sgdsim: the compiled simulator core {_WHY_PURE} (rebuild it: pip install -e .); "
          "running the same code as plain Python, much slower", file=sys.stderr)
