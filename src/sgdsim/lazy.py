"""Names a package re-exports, imported when first used rather than with the package.

A command's process imports only what it runs: ``sgdsim predict`` asks ``sgdsim.llm``
whether its argument describes a transformer, and importing the large-model package's
catalogue and step model for that answer, with the profiler's API and the PipeDream importer,
cost about a tenth of a one-point prediction's whole process (docs/benchmarks.md). Type
checkers read the same names from a ``TYPE_CHECKING`` block.

A name that is also a submodule's name (``sgdsim.llm.memory``, the function and its module)
must stay an eager import: importing the submodule later would set the package's attribute
to the module, and ``__getattr__`` is only asked for names the package does not have.
"""
from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` (PEP 562) for ``package``: ``exports`` maps each name to the
    submodule (relative, e.g. ``".step"``) that defines it."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__
