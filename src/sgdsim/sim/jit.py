"""Optional compiled core: numba when installed, the same code as plain Python otherwise.

The simulator is written in a restricted style (flat arrays, scalars, no objects) so that one
source runs both ways. ``SGDSIM_PURE_PYTHON=1`` forces the pure-Python path.
"""
from __future__ import annotations

import glob
import os
import sys

_FORCE_PURE = os.environ.get("SGDSIM_PURE_PYTHON", "") not in ("", "0")

try:  # pragma: no cover - depends on the environment
    if _FORCE_PURE:
        raise ImportError
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    numba = None
    HAVE_NUMBA = False


# The compiled core never allocates: arrays are made by the Python side and outlive every
# call. Without the NRT, numba emits no reference counting, which otherwise costs two atomic
# operations per array per call (the state tuples hold ~100 arrays) and dominated run time.
_FLAGS = dict(cache=True, nogil=True, _nrt=False)


def jit(fn):
    """A function of the compiled core: compiled (cached on disk) when numba is available."""
    if HAVE_NUMBA:
        return numba.njit(**_FLAGS)(fn)
    return fn


def drop_stale_cache(package_dir: str) -> None:
    """Delete the core's on-disk compiled cache when any of its sources changed.

    numba keys a cached function on its own file only: after an edit of
    ``sharing/fair.py`` the engine, which compiled fair's code into itself, would load its old
    machine code and silently run the old policy. One stamp over every compiled source
    (names, sizes, mtimes) in ``__pycache__/core-sources.stamp`` catches that. A cache moved
    elsewhere with NUMBA_CACHE_DIR is not touched.
    """
    sources = sorted(glob.glob(os.path.join(package_dir, "**", "*.py"), recursive=True))
    stamp = "\n".join(f"{os.path.relpath(p, package_dir)} {os.stat(p).st_size} {os.stat(p).st_mtime_ns}"
                      for p in sources)
    path = os.path.join(package_dir, "__pycache__", "core-sources.stamp")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == stamp:
                return
    except OSError:
        pass
    try:
        for p in glob.glob(os.path.join(package_dir, "**", "__pycache__", "*.nb[ic]"), recursive=True):
            os.remove(p)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(stamp)
    except OSError:  # a read-only install: numba cannot write its cache there either
        pass


if HAVE_NUMBA:
    drop_stale_cache(os.path.dirname(os.path.abspath(__file__)))


def jit_inline(fn):
    """A compiled-core function inlined into its callers at numba's IR level: the engine's
    handlers take the whole state (~85 arrays), which a call would pass field by field."""
    if HAVE_NUMBA:
        return numba.njit(inline="always", **_FLAGS)(fn)
    return fn


_announced = False


def announce_compile(engine_file: str, warm) -> None:
    """The first simulation after installing or changing the core compiles it (about a minute
    on 2 cores; cached on disk afterwards): say so, and show a spinner while ``warm()`` (a tiny
    simulation) compiles it, so that the user's own run does not look hung."""
    global _announced
    if _announced or not HAVE_NUMBA:
        return
    _announced = True
    here = os.path.join(os.path.dirname(engine_file), "__pycache__", "engine.run-*.nbi")
    cache_dir = getattr(numba.config, "CACHE_DIR", "")  # NUMBA_CACHE_DIR, if the user set one
    elsewhere = os.path.join(cache_dir or "", "**", "engine.run-*.nbi")
    if glob.glob(here) or (cache_dir and glob.glob(elsewhere, recursive=True)):
        return
    from ..progress import is_quiet, say, status

    if not sys.stderr.isatty() and not is_quiet():
        say("sgdsim: compiling the simulator core (once per install; about a minute) ...")
    with status("compiling the simulator core (once per install; about a minute)", quiet_s=0.0):
        warm()
