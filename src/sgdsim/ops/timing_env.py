"""The process settings a timing runs under (``ops measure``, ``ops retest``): PyTorch itself,
its threads, and flushed denormals."""
from __future__ import annotations

import contextlib

from ..errors import ConfigError


def torch_module():
    try:
        import torch
    except ImportError:
        raise ConfigError("timing operators needs PyTorch: pip install torch==2.13.0") from None
    return torch


@contextlib.contextmanager
def timing_settings(torch, threads: int):
    """Threads as the profile will run them, and denormals flushed: repeated in-place calls
    must not slow down on them. Both are per process (the flag also changes numpy's
    arithmetic), so both are put back when the timing ends."""
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(old_threads)
