"""ops/db_retry.retry_locked: a locked open is tried again, anything else is not."""
from __future__ import annotations

import pytest

from sgdsim.ops import db_retry


class Locked(Exception):
    pass


def _failing(n: int, message: str):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= n:
            raise Locked(message)
        return "opened"
    return fn, calls


def test_a_locked_open_is_tried_again(monkeypatch):
    monkeypatch.setattr(db_retry, "WAIT_S", 0.0)
    fn, calls = _failing(2, "(sqlite3.OperationalError) database is locked")
    assert db_retry.retry_locked(fn, Locked) == "opened" and len(calls) == 3


def test_another_error_or_too_many_tries_is_raised(monkeypatch):
    monkeypatch.setattr(db_retry, "WAIT_S", 0.0)
    fn, calls = _failing(1, "no such table")
    with pytest.raises(Locked, match="no such table"):
        db_retry.retry_locked(fn, Locked)
    assert len(calls) == 1
    fn, calls = _failing(db_retry.TRIES, "database is locked")
    with pytest.raises(Locked):
        db_retry.retry_locked(fn, Locked)
    assert len(calls) == db_retry.TRIES
