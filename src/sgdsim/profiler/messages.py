"""One-line text of an exception raised by user code (a model file, a zoo builder, a step),
for the ``ConfigError`` that reports it: the whole message may be a multi-line traceback.

Its own module, below ``spec`` and ``zoo``, so that neither has to import the other for it.
"""
from __future__ import annotations


def first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
