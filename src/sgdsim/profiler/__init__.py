"""``sgdsim profile``: one worker of a real PyTorch training job -> an sgdsim profile.

``profile_model(spec, batch_size, ...)`` returns a ``ProfileRun`` (the profile and the
profiling overhead); ``sgdsim.profiler.cli.register(subparsers)`` adds the ``profile``
command. Importing this package does not import torch (docs/profiler.md).
"""
from .api import NEEDS_TORCH, ProfileRun, profile_model  # noqa: F401
