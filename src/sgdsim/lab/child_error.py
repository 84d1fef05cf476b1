"""The line that says why a lab child process failed, read from its stderr.

A child's stderr ends with whatever torch logged while the process went down: c10d and gloo
warnings (``[W1015 12:00:00.123 socket.cpp:...] ...``) and Python warnings often come after
the traceback that explains the failure, so the last line alone names a symptom, not the cause.
"""
from __future__ import annotations

import re

MAX_CHARS = 400  # one line for the user, however long the child's message

# torch's C++ log lines start "[W" (warning) or "[I" (info); Python warnings name their
# category, and print the ``warnings.warn(`` source line after it
_NOISE = re.compile(r"^\[[WI][\d\s]|Warning\b|^warnings\.warn\(")
# the final line of a Python traceback: "RuntimeError: ...", "torch.distributed.DistError: ..."
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b(:|$)")


def real_lines(text: str | None) -> list[str]:
    """The stderr lines that are not warnings or info logs, stripped, empty ones left out."""
    lines = [ln.strip() for ln in (text or "").splitlines()]
    # an exception whose message mentions a warning is still the exception
    return [ln for ln in lines if ln and (_EXCEPTION.match(ln) or not _NOISE.search(ln))]


def cause_line(text: str | None, returncode: int | None = None) -> str:
    """One line naming why the child failed: the last exception line of its stderr, else its
    last line that is not a warning, else its exit status (and the last warning it logged)."""
    real = real_lines(text)
    exceptions = [ln for ln in real if _EXCEPTION.match(ln)]
    if exceptions:  # what follows it (C++ frames of a torch error) explains less
        line = exceptions[-1]
    elif real:
        line = real[-1]
    else:
        noise = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
        line = _status(returncode) + (f"; its stderr holds only warnings, the last: {noise[-1]}"
                                      if noise else "")
    return line if len(line) <= MAX_CHARS else line[:MAX_CHARS - 1] + "…"


def _status(returncode: int | None) -> str:
    if returncode is None:
        return "no message"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
