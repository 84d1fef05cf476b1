"""``sgdsim profile``: one worker of a real PyTorch training job -> an sgdsim profile.

``profile_model(spec, batch_size, ...)`` returns a ``ProfileRun`` (the profile and the
profiling overhead); ``sgdsim.profiler.cli.register(subparsers)`` adds the ``profile``
command. Importing this package does not import torch (docs/profiler.md), nor ``api`` until one of
its names is used (``sgdsim/lazy.py``): a prediction reads ``quality`` only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"NEEDS_TORCH": ".api", "ProfileRun": ".api", "profile_model": ".api"})

if TYPE_CHECKING:
    from .api import NEEDS_TORCH, ProfileRun, profile_model  # noqa: F401
