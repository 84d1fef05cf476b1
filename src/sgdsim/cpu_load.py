"""How much CPU other processes used while we measured: evidence that a measurement (a
profile, a network benchmark, an operator grid) was taken on a busy machine."""
from __future__ import annotations

import os
import time

MAX_OTHERS_CORES = 0.5  # other processes' CPU while measuring, in cores, above which it is busy


class CpuWatch:
    """Other processes' CPU between ``start()`` and ``cores()``, in cores (None off Linux)."""

    def start(self) -> CpuWatch:
        self._t0, self._busy0, self._own0 = time.perf_counter(), _busy_s(), _own_s()
        return self

    def cores(self) -> float | None:
        busy = _busy_s()
        if busy is None or self._busy0 is None:
            return None
        wall = time.perf_counter() - self._t0
        others = (busy - self._busy0) - (_own_s() - self._own0)
        return max(others, 0.0) / wall if wall > 0 else None


def _busy_s() -> float | None:
    """CPU seconds all processes have spent busy since boot (``/proc/stat``'s first line)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def _own_s() -> float:
    """This process's CPU and its finished children's (a benchmark's own helpers are not
    someone else's load)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def busy_line(cores: float | None, what: str) -> str | None:
    """A warning when other processes used more than ``MAX_OTHERS_CORES`` during ``what``."""
    if cores is None or cores <= MAX_OTHERS_CORES:
        return None
    return (f"warning: other processes used {cores:.1f} CPU cores while {what}: the figures may "
            f"be off; measure again when the machine is quiet")
