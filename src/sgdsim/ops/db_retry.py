"""Opening one fresh SQLite file from many processes at once (``ops measure`` workers, eight
writers in tests/test_opsdb_concurrency.py): switching a new file to WAL can fail with
"database is locked" at once, without waiting out the busy timeout, when another process is
creating the schema. Seen once in a fresh clone's suite (2026-12-03); the open is retried."""
from __future__ import annotations

import time

TRIES, WAIT_S = 6, 0.25


def retry_locked(fn, error_type):
    """``fn()``, again after a pause while it fails with ``error_type`` saying "locked"."""
    for attempt in range(TRIES - 1):
        try:
            return fn()
        except error_type as exc:
            if "locked" not in str(exc):
                raise
            time.sleep(WAIT_S * (attempt + 1))
    return fn()  # the last try: its error, whatever it is, is the caller's
