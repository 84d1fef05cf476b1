"""A registry: the one list of the names of one kind of plug-in.

The plug-ins live in their own packages (``arch/``, ``sim/sharing/``,
``topology/collectives/``, ...) and register there, one line each. The registry objects live
here, at the bottom of the import graph, so that the specs can check a name when they are
built without importing the models: the first lookup imports the plug-ins' home package
(``home``), which fills the registry. CLI choices, validation, the planner's search space and
the docs all read ``names``.
"""
from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

from ..errors import ConfigError

T = TypeVar("T")
_LOADING = threading.RLock()  # one for all registries: homes import each other


class Registry(Generic[T]):
    """Names to plug-ins of one kind, in registration order."""

    def __init__(self, kind: str, option: str, home: str | None = None):
        self.kind = kind  # "architecture"
        self.option = option  # "--arch": how users name it in messages
        self._home = home  # the package whose import registers the plug-ins
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._items[name] = item
        return item

    def _loaded(self) -> dict[str, T]:
        if self._home is not None:
            # threads (a fresh Dask worker's replications) may look up at once: the others wait
            # until the import has filled the registry, instead of seeing it empty
            with _LOADING:
                if self._home is not None:
                    importlib.import_module(self._home)
                    self._home = None
        return self._items

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._loaded())

    def check(self, name: str) -> str:
        """``name`` if registered, else one line that lists the known names."""
        if name not in self._loaded():
            raise ConfigError(f"unknown {self.option} {name!r} (choose from {', '.join(self.names)})")
        return name

    def __getitem__(self, name: str) -> T:
        return self._loaded()[self.check(name)]

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def items(self):
        return self._loaded().items()

    def values(self):
        return self._loaded().values()
