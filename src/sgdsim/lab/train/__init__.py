"""Real distributed SGD in the lab (``sgdsim lab run``): parameter server or ring all-reduce.

- ``run_training(...) -> TrainResult``: one measured run (``runner``); needs root;
- ``LAB_MODELS``: the built-in synthetic models (``models``);
- ``profile_lab_model(...)``: a compute-only profile of a lab model in this process (``timing``).

The processes are ``python -m sgdsim.lab.train.ps | worker | allreduce``. Submodules load
lazily, so ``import sgdsim.lab.train`` alone does not import torch.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "run_training": "runner", "TrainResult": "runner",
    "LAB_MODELS": "models", "load_workload": "models",
    "profile_lab_model": "timing", "standalone_profile": "timing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
