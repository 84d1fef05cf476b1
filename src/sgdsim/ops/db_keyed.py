"""The operator database's small tables, one row per key beside the measurements: a type's
trained estimator and its retest (keyed by device, op, dtype), and a model's timed step (keyed
by device, model, batch, dtype). A mixin of ``db.OpDB``, whose engine and helpers it uses."""
from __future__ import annotations

import time

from ..errors import ConfigError
from .db_tables import RETEST, STEP

STEP_KEY = ("model", "batch_size", "dtype")  # with the device: a step's key


class KeyedTables:
    def save_estimator(self, device: str, op: str, dtype: str, payload: str) -> None:
        self._save_keyed(self.est_t, device, {"op": op, "dtype": dtype},
                         {"payload": payload, "trained_at": time.time()})

    def save_retest(self, device: str, op: str, dtype: str, values: dict) -> None:
        """``values``: the ``RETEST`` columns; replaces the type's previous retest."""
        self._save_keyed(self.retest_t, device, {"op": op, "dtype": dtype}, {k: values[k] for k in RETEST})

    def save_step(self, device: str, model: str, batch_size: int, dtype: str, step_s: float,
                  calls_s: float) -> None:
        """A model's step timed whole, and the sum of its calls' rows then; replaces an older one."""
        if not (step_s > 0 and calls_s > 0):
            raise ConfigError(f"refusing a step of {step_s!r} s over calls of {calls_s!r} s: "
                              "both must be > 0")
        self._save_keyed(self.steps_t, device, {"model": model, "batch_size": batch_size, "dtype": dtype},
                         {"step_s": step_s, "calls_s": calls_s, "measured_at": time.time()})

    def upsert_steps(self, steps: list[dict]) -> int:
        """Steps timed elsewhere (``exchange_steps.import_steps``'s rows), their times and dates
        as they were, their devices added or updated; a key already here is replaced."""
        last = {(s["device"].name, *(s[k] for k in STEP_KEY)): s for s in steps}

        def save():
            with self._write() as c:
                ids = self._device_ids(c, {s["device"].name: s["device"] for s in last.values()})
                stmt = self._insert(self.steps_t)
                c.execute(stmt.on_conflict_do_update(
                    index_elements=["device_id", *STEP_KEY], set_={k: stmt.excluded[k] for k in STEP}),
                    [{"device_id": ids[k[0]], **dict(zip(STEP_KEY, k[1:])), **{f: s[f] for f in STEP}}
                     for k, s in sorted(last.items())])  # sorted: two writers lock in one order
        if last:
            self._guard(save)
        return len(last)

    def _save_keyed(self, table, device: str, key: dict, values: dict) -> None:
        """One row of a table keyed by device and ``key``, inserted or replaced."""
        def save():
            with self._write() as c:
                dev_id = self._device_id(c, device)
                if dev_id is None:
                    raise ConfigError(f"no device {device!r} in {self.shown}")
                stmt = self._insert(table)
                c.execute(stmt.on_conflict_do_update(
                    index_elements=["device_id", *key], set_={k: stmt.excluded[k] for k in values}),
                    [{"device_id": dev_id, **key, **values}])
        self._guard(save)

    def load_retests(self) -> dict[tuple[str, str, str], dict]:
        """(device, op, dtype) -> the ``RETEST`` columns."""
        r, d = self.retest_t, self.devices_t
        q = self.sa.select(d.c.name, r.c.op, r.c.dtype, *(r.c[k] for k in RETEST)).join(d, r.c.device_id == d.c.id)
        return {tuple(row[:3]): dict(zip(RETEST, row[3:])) for row in self._guard(lambda: self._all(q))}

    def load_estimators(self, device: str) -> dict[tuple[str, str], str]:
        e, d = self.est_t, self.devices_t
        q = (self.sa.select(e.c.op, e.c.dtype, e.c.payload).join(d, e.c.device_id == d.c.id)
             .where(d.c.name == device))
        return {(op, dt): text for op, dt, text in self._guard(lambda: self._all(q))}

    def load_steps(self, device: str | None = None, dtype: str | None = None) -> list[dict]:
        """The timed steps (device, model, batch_size, dtype and the ``STEP`` columns), oldest first."""
        s, d = self.steps_t, self.devices_t
        q = self.sa.select(d.c.name, s.c.model, s.c.batch_size, s.c.dtype, *(s.c[k] for k in STEP)
                           ).join(d, s.c.device_id == d.c.id)
        for col, value in ((d.c.name, device), (s.c.dtype, dtype)):
            if value is not None:
                q = q.where(col == value)
        names = ("device", "model", "batch_size", "dtype", *STEP)
        return [dict(zip(names, row)) for row in self._guard(lambda: self._all(q.order_by(s.c.measured_at)))]
