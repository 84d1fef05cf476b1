"""What a CPU step pays the operating system for memory, and how to profile without it.

glibc's malloc gives large freed blocks back to the kernel (``munmap`` for blocks above its mmap
threshold, a trim of the heap's top above its trim threshold), so a training step that frees its
gradients and activations faults them in again in the next step: the kernel maps and zeroes
every page on first touch. On this project's 2-core VMs that cost up to 0.2 s of kernel time
per step of BERT and 1.0 s of GPT-2 at batch 2-4 (up to 34 % of the step), and an operator
timed alone, which reuses its freed memory, rarely pays it (docs/profiler.md, "Memory the step
gives back").

``os_cost()`` reads the page faults and kernel CPU time of this process (``getrusage``), so the
profiler can say how much of each plain step went there. ``keep_freed_memory()`` tells glibc
to keep what it frees, as PyTorch's caching allocator does on a GPU and as jemalloc or tcmalloc
do: steps then fault nothing in after the first.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import resource

from ..errors import ConfigError

# mallopt(3) parameters (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
KEEP_BYTES = 1 << 30  # no block up to 1 GiB is mmapped, no heap top up to 1 GiB trimmed
PAGE_BYTES = resource.getpagesize()
ENV_HINT = ("MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 "
            "MALLOC_TOP_PAD_=67108864")


def os_cost() -> tuple[int, float]:
    """(bytes faulted in so far, kernel CPU seconds so far) of this process: minor page faults
    times the page size, and ``ru_stime``."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_minflt * PAGE_BYTES, use.ru_stime


def os_cost_of(run):
    """(``run()``'s result, bytes it faulted in, kernel seconds it took): ``os_cost`` around it."""
    bytes0, kernel0 = os_cost()
    out = run()
    bytes1, kernel1 = os_cost()
    return out, bytes1 - bytes0, kernel1 - kernel0


def keep_freed_memory() -> None:
    """Make glibc's malloc keep freed memory for the rest of this process (there is no undoing
    it: setting the mmap threshold ends glibc's own adjustment of it). Refused, in one line,
    where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        raise ConfigError("--keep-memory needs glibc's malloc (Linux); with another C library, "
                          "set its allocator's own option to keep freed memory") from None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    for param, value in ((M_MMAP_THRESHOLD, KEEP_BYTES), (M_TRIM_THRESHOLD, KEEP_BYTES),
                         (M_TOP_PAD, 64 << 20)):
        if mallopt(param, value) != 1:
            raise ConfigError(f"--keep-memory: glibc refused mallopt({param}, {value}); set "
                              f"{ENV_HINT} in the environment instead")


def _read(notes: dict) -> tuple[float, float, float, bool] | None:
    """(bytes faulted in, kernel seconds, median plain step seconds, memory kept) of a
    profile's ``profiler`` notes; None for an older or imported profile without them."""
    try:
        return (float(notes["plain_faulted_bytes"]), float(notes["plain_kernel_s"]),
                float(notes["plain_step_s"]), bool(notes["keep_memory"]))
    except (KeyError, TypeError, ValueError):
        return None


def kernel_note(notes: dict) -> str | None:
    """A line for the user when the kernel took a tenth of the median plain step or more (and
    memory was not kept)."""
    read = _read(notes)
    if read is None:
        return None
    faulted, kernel_s, step_s, kept = read
    if kept or step_s <= 0 or kernel_s < 0.1 * step_s:
        return None
    return (f"note: {kernel_s / step_s:.0%} of a step ({kernel_s * 1e3:.0f} ms) is kernel time, "
            f"mostly faulting in {faulted / 1e6:.0f} MB that the allocator gave back to the "
            f"system in the step before; an allocator that keeps freed memory (jemalloc, "
            f"tcmalloc, or {ENV_HINT}) would not pay it: '--keep-memory' profiles the step so "
            f"(docs/profiler.md)")


def describe(notes: dict) -> str | None:
    """One line for ``sgdsim info`` from a profile's ``profiler`` notes (None: not recorded)."""
    read = _read(notes)
    if read is None:
        return None
    faulted, kernel, step, kept = read
    how = ("glibc keeping freed memory (--keep-memory)" if kept
           else "the allocator as the job runs it")
    share = f"{kernel / step:.0%}" if step > 0 else "an unknown share"
    return (f"{share} of a plain step in the kernel, {faulted / 1e6:.0f} MB faulted in a step, "
            f"with {how}")
