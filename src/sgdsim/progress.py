"""Progress on stderr for work that may take more than ~2 s, drawn with rich.

Shown only on a terminal and only once the work has lasted ``quiet_s`` (short work prints
nothing); silent when stderr is not a terminal (logs, pipes, CI) and under ``--quiet``, which
the CLI passes to ``configure``. ``Progress`` counts items (points of a sweep); ``status`` is a
spinner with the elapsed time for one long call (compiling, profiling, measuring).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import TextIO

_quiet = False


def configure(quiet: bool) -> None:
    """``--quiet``: no progress and no notices for this process."""
    global _quiet
    _quiet = quiet


def is_quiet() -> bool:
    return _quiet


def _terminal(stream: TextIO) -> bool:
    return not _quiet and bool(getattr(stream, "isatty", lambda: False)())


def _console(stream: TextIO):
    from rich.console import Console

    return Console(file=stream, force_terminal=True)


def say(message: str, stream: TextIO | None = None) -> None:
    """A one-line notice (what is being done, where a file went); silent under --quiet."""
    if not _quiet:
        print(message, file=stream or sys.stderr, flush=True)


class Progress:
    """``advance()`` per finished item; ``close()`` (or ``with``) at the end. The bar appears
    ``quiet_s`` after the start even when no item has finished yet (one long point)."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, quiet_s: float = 2.0):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()
        self._bar = self._task = None
        self._closed = False
        self._timer = None
        if _terminal(self.stream):
            self._timer = threading.Timer(quiet_s, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, SpinnerColumn,
                                   TextColumn, TimeElapsedColumn, TimeRemainingColumn)

        with self._lock:
            if self._closed:
                return
            # one item (a spinner around one call) has no remaining time to estimate
            eta = [TextColumn("eta"), TimeRemainingColumn()] if self.total > 1 else []
            self._bar = Bar(SpinnerColumn(), TextColumn(self.label), BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), *eta,
                            console=_console(self.stream))
            self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)
            self._bar.start()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(self._task, completed=self.done, total=self.total)

    def add_total(self, n: int) -> None:
        """More items than announced (a measurement taken again)."""
        with self._lock:
            self.total += n
            if self._bar is not None:
                self._bar.update(self._task, total=self.total)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def status(text: str, stream: TextIO | None = None, quiet_s: float = 2.0):
    """A spinner with the elapsed time around one long call; shown after ``quiet_s``."""
    bar = Progress(1, text, stream, quiet_s)
    try:
        yield
    finally:
        bar.close()
