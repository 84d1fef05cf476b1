"""The registries of sgdsim's plug-ins, one per kind; each is the one list of its names.

A plug-in registers itself in its home package with one line (``ARCHITECTURES.register(...)``
in ``arch/__init__.py``); nothing else lists its name. The defaults a spec starts from are
named here, with the registry that owns them.
"""
from __future__ import annotations

from typing import Any

from .registry import Registry

ARCHITECTURES: Registry[Any] = Registry("architecture", "--arch", home="sgdsim.arch")
SHARINGS: Registry[Any] = Registry("sharing policy", "--sharing", home="sgdsim.sim.sharing")
COLLECTIVES: Registry[Any] = Registry("collective", "--collective", home="sgdsim.topology.collectives")
STREAMS: Registry[Any] = Registry("stream scheduler", "--streams", home="sgdsim.sim.streams")
ORDERS: Registry[Any] = Registry("transmission order", "--order", home="sgdsim.sim.orders")
EXECUTORS: Registry[Any] = Registry("executor", "--backend", home="sgdsim.evaluate.executors")

MODES = ("async", "sync")  # not plug-ins: the two ways SGD updates the parameters

DEFAULT_ARCH = "ps"
DEFAULT_COLLECTIVE = "ring"
DEFAULT_STREAMS = "fifo"
DEFAULT_ORDER = "profiled"
DEFAULT_EXECUTOR = "local"
