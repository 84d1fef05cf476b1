"""Measuring real networks and emulating a cluster on one machine.

- ``netbench``: point-to-point TCP bandwidth and latency, the α·size + β fit, hardware files;
- ``cluster``: ``LabCluster``, network namespaces joined by a tc-shaped bridge (needs root;
  its ``ip``/``tc`` plumbing is in ``netns``, its state file in ``state``);
- ``cli``: ``register(subparsers)`` adds the ``netbench`` (``netbench_cli``) and ``lab`` commands;
- ``traces``: pulls and pushes of a traced PS run, for the lab's fits and ``validate``.

Submodules are imported lazily so that ``python -m sgdsim.lab.netbench`` does not import
itself twice.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Hardware": "hardware", "Fit": "hardware", "fit_overhead": "hardware",
    "load_hardware": "hardware", "save_hardware": "hardware",
    "Measurement": "netbench", "measure": "netbench", "run_local": "netbench",
    "run_lab": "netbench", "serve": "netbench", "parse_sizes": "netbench",
    "LabCluster": "cluster", "lab_down": "cluster", "lab_status": "cluster",
    "register": "cli",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
