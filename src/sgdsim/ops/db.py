"""The operator database: a SQLite file (the default) or a PostgreSQL URL, one SQLAlchemy Core
code path for both.

Rows are keyed by (device, op, canonical parameters, dtype): measuring again updates a row,
never adds one (``INSERT ... ON CONFLICT DO UPDATE`` in both dialects). Writes are one
transaction per ``upsert`` call, so a killed writer leaves whole batches or nothing; SQLite runs
in WAL mode with a busy timeout and takes its write lock at ``BEGIN IMMEDIATE``, so concurrent
writers wait for each other instead of failing or losing rows.

A run reads what it needs once (``lookup`` of every distinct call, ``load_estimators``); the
simulator never queries per operator.
"""
from __future__ import annotations

import contextlib
import os
import re
import urllib.parse
from collections.abc import Iterable

from ..errors import ConfigError
from .db_keyed import KeyedTables
from .db_tables import VALUES, tables as _tables
from . import db_retry, reference
from .optypes import complete
from .records import Device, OpRecord, params_from_key, params_key

SCHEMA_VERSION = 4  # 2: bounds, retests; 3: references; 4: steps (older ones upgraded when opened)
FORMAT = "sgdsim-ops"  # meta row telling our database from another program's
BUSY_TIMEOUT_MS = 60_000  # a writer waits this long for the others before giving up
CONNECT_TIMEOUT_S = 10  # an unreachable server fails in seconds, not minutes
CHUNK = 500  # keys per lookup query: well under every driver's parameter limit
TABLES = ("meta", "devices", "op_times", "estimators", "retests", "steps")
KEY = ("device_id", "op", "params", "dtype")
_SECRET = re.compile(r"^([A-Za-z0-9+.-]+://[^:/@]*):(.*)@")  # greedy: a password may hold '@'


def default_db_path() -> str:
    if os.environ.get("SGDSIM_OPS_DB"):
        return os.environ["SGDSIM_OPS_DB"]
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return os.path.join(base, "sgdsim", "ops.sqlite")


def mask(url: str) -> str:
    """The URL without its password: never printed back."""
    return _SECRET.sub(r"\1:***@", url)


def open_db(target: str | None, create: bool = True) -> OpDB:
    """``target``: a file path or a ``sqlite:///`` / ``postgresql+psycopg://`` URL; None: the
    per-user default. ``create=False`` (readers) refuses a database that does not exist yet."""
    try:
        import sqlalchemy as sa
    except ImportError:
        raise ConfigError("the operator database needs SQLAlchemy: "
                          "pip install -e '.[ops]'") from None
    target = default_db_path() if target is None else target
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///"):].split("?")[0]
    if "://" not in target:
        return OpDB(sa, _sqlite_file(target, create), create, shown=target)
    url = re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", target)  # psycopg 3, not 2
    # An '@' inside the password: the last '@' ends it (SQLAlchemy would split at the first).
    url = _SECRET.sub(lambda m: f"{m.group(1)}:{m.group(2).replace('@', '%40')}@", url)
    if not url.startswith("postgresql+psycopg://"):
        raise ConfigError(f"--db {mask(target)}: give a file path, sqlite:///FILE or "
                          "postgresql+psycopg://USER@HOST/DB")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise ConfigError("a PostgreSQL database needs psycopg: "
                          "pip install -e '.[postgres]'") from None
    return OpDB(sa, url, create, shown=mask(target))


def _sqlite_file(path: str, create: bool) -> str:
    if not path.strip():
        raise ConfigError("--db is empty: give a file path or a URL")
    if os.path.isdir(path):
        raise ConfigError(f"operator database {path} is a folder, not a file")
    if not os.path.exists(path):
        if not create:
            raise ConfigError(f"no operator database at {path} "
                              f"(measure first: sgdsim ops measure --db {path} ...)")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return "sqlite:///" + os.path.abspath(path)


class OpDB(KeyedTables):
    def __init__(self, sa, url: str, create: bool, shown: str):
        self.sa, self.shown = sa, shown
        secret = m.group(2) if (m := _SECRET.match(url)) else ""
        self._secrets = sorted({secret, urllib.parse.unquote(secret)} - {""}, key=len,
                               reverse=True)
        sqlite = url.startswith("sqlite")
        args = {"timeout": BUSY_TIMEOUT_MS / 1000} if sqlite else {
            "connect_timeout": CONNECT_TIMEOUT_S}
        try:
            self.engine = sa.create_engine(url, connect_args=args)
        except Exception as exc:  # a malformed URL: the driver's message, password removed
            raise ConfigError(f"cannot open operator database {shown}: "
                              f"{self._line(exc)}") from None
        self.dialect = self.engine.dialect.name
        if sqlite:
            _sqlite_pragmas(sa, self.engine)
        (self.md, self.meta, self.devices_t, self.ops_t, self.est_t, self.retest_t,
         self.steps_t) = _tables(sa)
        try:
            self._guard(lambda: db_retry.retry_locked(lambda: self._init_schema(create), self.sa.exc.OperationalError))
        except BaseException:
            self.engine.dispose()  # no pooled connection left open on a refused database
            raise

    # ------------------------------------------------------------------ schema

    def _init_schema(self, create: bool) -> None:
        version = self._version(self.engine)
        if version is None and create:
            # Under the write lock, again: eight writers starting on a fresh file create it once.
            with self._write() as c:
                if self.dialect == "postgresql":  # SQLite's BEGIN IMMEDIATE already locks
                    c.exec_driver_sql("SELECT pg_advisory_xact_lock(72627)")
                if self._version(c) is None:
                    self.md.create_all(c)
                    c.execute(self.sa.insert(self.meta), [
                        {"key": "format", "value": FORMAT},
                        {"key": "schema", "value": str(SCHEMA_VERSION)}])
            version = SCHEMA_VERSION
        if version is None:
            raise ConfigError(f"{self.shown} has no operator database yet (sgdsim ops measure)")
        if version > SCHEMA_VERSION:
            raise ConfigError(f"{self.shown} has operator-database schema {version}, newer than "
                              f"this sgdsim's {SCHEMA_VERSION}: upgrade sgdsim")
        if version < SCHEMA_VERSION:
            self._upgrade(version)

    def _upgrade(self, version: int) -> None:
        """Schema 1 had no bound flags: every time in it was a measurement (or a 0 the old
        timer stored; training sets those aside). Schemas 1-2 had no reference times: their
        rows are read as stored (0.0: not timed). Schemas 1-3 had no steps table: no step timed."""
        added = {1: ("fwd_bound INTEGER", "bwd_bound INTEGER"), 2: ("fwd_ref_s FLOAT", "bwd_ref_s FLOAT"), 3: ()}
        with self._write() as c:
            if self.dialect == "postgresql":
                c.exec_driver_sql("SELECT pg_advisory_xact_lock(72627)")
            if self._version(c) != version:
                return  # another process upgraded it first
            for since in range(version, SCHEMA_VERSION):
                for column in added[since]:
                    c.exec_driver_sql(f"ALTER TABLE op_times ADD COLUMN {column} NOT NULL DEFAULT 0")
            self.md.create_all(c)  # the tables older schemas lacked (checkfirst)
            c.execute(self.sa.update(self.meta).where(self.meta.c.key == "schema").values(
                value=str(SCHEMA_VERSION)))

    def _version(self, bind) -> int | None:
        """Our schema version; None for an empty database; refuses anyone else's tables."""
        names = set(self.sa.inspect(bind).get_table_names())
        ours = names & set(TABLES)
        if not names or (self.dialect == "postgresql" and not ours):
            return None  # a PostgreSQL database may well hold other programs' tables
        if "meta" in names:
            q = self.sa.select(self.meta.c.key, self.meta.c.value)
            meta = dict(self._all(q) if bind is self.engine else bind.execute(q).all())
            if meta.get("format") == FORMAT and meta.get("schema", "").isdigit():
                return int(meta["schema"])
        raise ConfigError(f"{self.shown} is not an sgdsim operator database "
                          f"(it holds tables {', '.join(sorted(names)[:6])})")

    # ------------------------------------------------------------------ writes

    def upsert(self, records: Iterable[OpRecord]) -> int:
        """Insert or update ``records`` in one transaction; returns how many keys were written.
        A forward time of 0 is refused: a time too short to resolve is stored as its bound."""
        records = list(records)
        zero = [r for r in records if r.fwd_s <= 0]
        if zero:
            raise ConfigError(f"refusing {len(zero)} record(s) with a forward time of 0 s (first: {zero[0].op} "
                              f"{params_key(zero[0].params)}): a time too short to resolve is stored as its "
                              "upper bound (sgdsim ops measure does this); measure them again")
        return self._guard(lambda: self._upsert(records)) if records else 0

    def _upsert(self, records: list[OpRecord]) -> int:
        last = {r.key: r for r in records}  # the last record of a key wins, as if one by one
        keys = sorted(last) if self.dialect == "postgresql" else list(last)
        with self._write() as c:
            ids = self._device_ids(c, {r.device.name: r.device for r in last.values()})
            # Sorted on PostgreSQL: two writers lock rows in one order and cannot deadlock.
            rows = [(ids[k[0]], k[1], k[2], k[3], float(r.fwd_s), float(r.bwd_s), int(r.samples),
                     float(r.fwd_spread), float(r.bwd_spread), float(r.measured_at), int(r.fwd_bound),
                     int(r.bwd_bound), float(r.fwd_ref_s), float(r.bwd_ref_s))
                    for k in keys for r in (last[k],)]
            stmt = self._insert(self.ops_t)
            self._executemany(c, stmt.on_conflict_do_update(
                index_elements=list(KEY), set_={k: stmt.excluded[k] for k in VALUES}),
                KEY + VALUES, rows)
        return len(rows)

    def _executemany(self, c, stmt, columns: tuple, rows: list[tuple]) -> None:
        """``stmt`` compiled once by the dialect, the rows handed to the driver as they are:
        SQLAlchemy's per-row parameter processing would double the time of a large upsert."""
        compiled = stmt.compile(dialect=self.engine.dialect)
        if compiled.positional:
            at = [columns.index(name) for name in compiled.positiontup]
            params = [tuple(row[i] for i in at) for row in rows] if at != list(
                range(len(columns))) else rows
        else:
            params = [dict(zip(columns, row)) for row in rows]
        c.exec_driver_sql(compiled.string, params)

    def _device_ids(self, c, devices: dict[str, Device]) -> dict[str, int]:
        """Device rows upserted (the latest framework and driver win); name -> id."""
        stmt = self._insert(self.devices_t)
        c.execute(stmt.on_conflict_do_update(
            index_elements=["name"], set_={k: stmt.excluded[k] for k in
                                           ("kind", "framework", "driver")}),
            [{"name": d.name, "kind": d.kind, "framework": d.framework, "driver": d.driver}
             for _, d in sorted(devices.items())])
        t = self.devices_t
        return dict(c.execute(self.sa.select(t.c.name, t.c.id).where(
            t.c.name.in_(list(devices)))).all())

    def _insert(self, table):
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        return insert(table)

    @contextlib.contextmanager
    def _write(self):
        """A write transaction: commit on success, roll back on error. SQLite takes its write
        lock at BEGIN IMMEDIATE: a deferred BEGIN would fail "locked" on upgrading, not wait."""
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    # ------------------------------------------------------------------ reads

    def load(self, device: str | None = None, op: str | None = None,
             dtype: str | None = None, raw: bool = False) -> list[OpRecord]:
        """Every record matching the filters, in one query; times at the machine's mean speed
        over each type's rows (``reference.steady``), or as stored with ``raw``."""
        o, d = self.ops_t, self.devices_t
        q = self._select()
        for col, value in ((d.c.name, device), (o.c.op, op), (o.c.dtype, dtype)):
            if value is not None:
                q = q.where(col == value)
        rows = self._guard(lambda: self._records(q.order_by(d.c.name, o.c.op, o.c.dtype, o.c.params)))
        # the filters select whole (device, op, dtype) groups: their means are the rows' own
        return rows if raw else reference.steady(rows, reference.means(rows))

    def lookup(self, device: str, keys: Iterable[tuple[str, str, str]]) -> dict:
        """{(op, params_key, dtype): OpRecord} for those of ``keys`` measured on ``device``,
        times as ``load`` gives them; one query per operator type and dtype (per CHUNK keys)."""
        by_type: dict[tuple[str, str], set[str]] = {}
        for op, pk, dt in set(keys):
            by_type.setdefault((op, dt), set()).add(pk)
        return self._guard(lambda: self._lookup(device, by_type)) if by_type else {}

    def _lookup(self, device: str, by_type: dict) -> dict:
        o, out = self.ops_t, {}
        with self.engine.connect() as c:
            dev_id = self._device_id(c, device)
            if dev_id is None:
                return {}
            for (op, dt), pks in sorted(by_type.items()):
                pks = sorted(pks)
                group = o.c.device_id == dev_id, o.c.op == op, o.c.dtype == dt
                mean = {(device, op, dt): self._reference_means(c, group)}
                for i in range(0, len(pks), CHUNK):
                    q = self._select().where(*group, o.c.params.in_(pks[i:i + CHUNK]))
                    for r in reference.steady(self._records(q, c), mean):
                        out[r.key[1:]] = r
        return out

    def _reference_means(self, c, group) -> tuple[float, float]:
        """A type's mean reference times over all its rows (``reference.means`` in SQL)."""
        sa, o = self.sa, self.ops_t
        q = sa.select(*(sa.func.avg(sa.case((col > 0, col))) for col in (o.c.fwd_ref_s, o.c.bwd_ref_s)))
        f, b = c.execute(q.where(*group)).one()
        return float(f or 0.0), float(b or 0.0)

    def devices(self) -> list[Device]:
        t = self.devices_t
        q = self.sa.select(t.c.name, t.c.kind, t.c.framework, t.c.driver).order_by(t.c.name)
        return [Device(*r) for r in self._guard(lambda: self._all(q))]

    def stats(self) -> list[dict]:
        """Per (device, op, dtype): rows, min / median / max forward seconds, last measured;
        the median in Python, since SQLite has no percentile function."""
        o, d = self.ops_t, self.devices_t
        q = (self.sa.select(d.c.name, o.c.op, o.c.dtype, o.c.fwd_s, o.c.measured_at)
             .join(d, o.c.device_id == d.c.id))
        groups: dict[tuple, list] = {}
        for dev, op, dt, fwd, at in self._guard(lambda: self._all(q)):
            groups.setdefault((dev, op, dt), []).append((fwd, at))
        out = []
        for (dev, op, dt), rows in sorted(groups.items()):
            fwd = sorted(f for f, _ in rows)
            n = len(fwd)
            out.append({"device": dev, "op": op, "dtype": dt, "rows": n, "min_fwd_s": fwd[0],
                        "median_fwd_s": (fwd[(n - 1) // 2] + fwd[n // 2]) / 2,
                        "max_fwd_s": fwd[-1], "last_measured_at": max(a for _, a in rows)})
        return out

    def _device_id(self, c, name: str) -> int | None:
        t = self.devices_t
        return c.execute(self.sa.select(t.c.id).where(t.c.name == name)).scalar_one_or_none()

    def _select(self):
        o, d = self.ops_t, self.devices_t
        return self.sa.select(d.c.name, d.c.kind, d.c.framework, d.c.driver, o.c.op,
                              o.c.params, o.c.dtype, *(o.c[k] for k in VALUES)
                              ).join(d, o.c.device_id == d.c.id)

    def _records(self, q, conn=None) -> list[OpRecord]:
        rows = conn.execute(q).all() if conn is not None else self._all(q)
        return [OpRecord(Device(*r[:4]), r[4], complete(r[4], params_from_key(r[5])), *r[6:13], fwd_bound=bool(r[13]),
                         bwd_bound=bool(r[14]), fwd_ref_s=r[15], bwd_ref_s=r[16]) for r in rows]

    def _all(self, q) -> list:
        with self.engine.connect() as c:
            return list(c.execute(q).all())

    # ------------------------------------------------------------------ plumbing

    def _guard(self, fn):
        """Database errors (locked past the timeout, server gone, a corrupt file) as one line."""
        try:
            return fn()
        except ConfigError:
            raise
        except self.sa.exc.SQLAlchemyError as exc:
            raise ConfigError(f"operator database {self.shown}: "
                              f"{self._line(getattr(exc, 'orig', None) or exc)}") from None

    def _line(self, exc) -> str:
        lines = str(exc).strip().splitlines()
        text = lines[0][:300] if lines else type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> OpDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sqlite_pragmas(sa, engine) -> None:
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (IMMEDIATE for writes)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")  # readers never block the writer, nor it them
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()
