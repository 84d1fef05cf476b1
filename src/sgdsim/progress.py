"""A progress line on stderr for work that may take more than ~2 s.

Silent for the first ``quiet_s`` seconds (short work prints nothing); then on a terminal one
line rewritten in place, elsewhere (logs, CI) a line every ``log_every_s`` seconds.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 quiet_s: float = 2.0, log_every_s: float = 10.0, clock=time.monotonic):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream if stream is not None else sys.stderr
        self.quiet_s, self.log_every_s, self.clock = quiet_s, log_every_s, clock
        self.t0 = clock()
        self._last_print: float | None = None
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        elapsed = now - self.t0
        if elapsed < self.quiet_s:
            return
        if not self._tty and self._last_print is not None and \
                now - self._last_print < self.log_every_s and self.done < self.total:
            return
        self._last_print = now
        line = f"{self.label}: {self.done}/{self.total} ({elapsed:.0f} s)"
        self.stream.write(f"\r{line}" if self._tty else f"{line}\n")
        self.stream.flush()

    def close(self) -> None:
        if self._tty and self._last_print is not None:
            self.stream.write("\n")
            self.stream.flush()
