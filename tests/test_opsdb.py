"""The operator database: one code path for SQLite and a real PostgreSQL server; upserts that
update, never duplicate; exact CSV/Parquet round trips; one-line errors on bad files and URLs."""
from __future__ import annotations

import csv
import io
import os
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("sqlalchemy")

from opsdb_support import postgres_server, why_no_postgres  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.db import default_db_path, mask, open_db  # noqa: E402
from sgdsim.ops.exchange import FIELDS, export_records, import_records  # noqa: E402
from sgdsim.ops.records import Device, OpRecord, params_key  # noqa: E402

DEV = Device("cpu (1 threads, test)", "cpu", "pytorch test", "")
GPU = Device("cuda:0 (test)", "cuda", "pytorch test", "cuda 12")


def rec(numel, fwd, device=DEV, op="relu", dtype="float32", at=1.0):
    return OpRecord(device, op, {"numel": numel, "gi": 1}, dtype, fwd, 2 * fwd, 5, 0.01, 0.02,
                    at)


@pytest.fixture(scope="module")
def pg_url():
    why = why_no_postgres()
    if why:
        pytest.skip(why)
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def target(request, tmp_path_factory):
    """Where a backend's database lives; ``fresh(target)`` empties it for each test."""
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("sqlite") / "ops.sqlite")
    return request.getfixturevalue("pg_url")


def fresh(target: str):
    db = open_db(target)
    with db.engine.begin() as c:  # a sqlite file or a server shared by the module: empty it
        for t in ("steps", "retests", "estimators", "op_times", "devices"):
            c.exec_driver_sql(f"DELETE FROM {t}")
    return db


@pytest.fixture
def db(target):
    with fresh(target) as handle:
        yield handle


def test_remeasuring_updates_and_never_duplicates(db):
    assert db.upsert([rec(n, 1e-6 * n) for n in range(1, 201)]) == 200
    assert db.upsert([rec(5, 9.0, at=2.0), rec(500, 1e-3), rec(5, 8.0, at=3.0)]) == 2
    rows = db.load()
    assert len(rows) == 201
    again = {r.params["numel"]: r for r in rows}
    assert (again[5].fwd_s, again[5].measured_at, again[7].fwd_s) == (8.0, 3.0, 7e-6)


def test_a_device_row_is_updated_not_duplicated(db):
    db.upsert([rec(1, 1.0)])
    newer = Device(DEV.name, "cpu", "pytorch 9", "")
    db.upsert([rec(2, 1.0, device=newer)])
    assert db.devices() == [newer]
    assert {r.device for r in db.load()} == {newer}


def test_load_filters_and_lookup_finds_exactly_the_measured_keys(db):
    db.upsert([rec(n, 1e-6 * n) for n in range(1, 1201)] + [rec(3, 1.0, device=GPU),
                                                             rec(3, 2.0, dtype="bfloat16"),
                                                             rec(3, 4.0, op="gelu")])
    keys = [rec(n, 0).key[1:] for n in range(1000, 1300)]
    hits = db.lookup(DEV.name, keys + [rec(3, 0, dtype="bfloat16").key[1:]])
    assert sorted(k[0] + str(r.params["numel"]) + k[2] for k, r in hits.items()) == sorted(
        [f"relu{n}float32" for n in range(1000, 1201)] + ["relu3bfloat16"])
    assert all(k == r.key[1:] for k, r in hits.items())
    assert db.lookup(GPU.name, [rec(3, 0).key[1:]])[rec(3, 0).key[1:]].fwd_s == 1.0
    assert db.lookup("no such device", keys) == {} and db.lookup(DEV.name, []) == {}
    assert [d.name for d in db.devices()] == sorted([DEV.name, GPU.name])
    assert len(db.load(device=DEV.name, op="relu", dtype="float32")) == 1200
    assert [r.fwd_s for r in db.load(op="gelu")] == [4.0]
    assert [r.device for r in db.load(device=GPU.name)] == [GPU]


def test_stats_per_device_op_and_dtype(db):
    db.upsert([rec(n, float(n), at=float(n)) for n in (4, 1, 3, 2)] + [rec(1, 5.0, device=GPU)])
    stats = {(s["device"], s["op"], s["dtype"]): s for s in db.stats()}
    cpu = stats[(DEV.name, "relu", "float32")]
    assert (cpu["rows"], cpu["min_fwd_s"], cpu["median_fwd_s"], cpu["max_fwd_s"],
            cpu["last_measured_at"]) == (4, 1.0, 2.5, 4.0, 4.0)
    assert stats[(GPU.name, "relu", "float32")]["median_fwd_s"] == 5.0 and len(stats) == 2


def test_estimators_are_stored_per_device_op_and_dtype(db):
    db.upsert([rec(1, 1.0), rec(1, 1.0, device=GPU)])
    db.save_estimator(DEV.name, "relu", "float32", '{"v": 1}')
    db.save_estimator(DEV.name, "relu", "float32", '{"v": 2}')
    db.save_estimator(DEV.name, "relu", "bfloat16", '{"v": 4}')
    db.save_estimator(GPU.name, "relu", "float32", '{"v": 3}')
    assert db.load_estimators(DEV.name) == {("relu", "float32"): '{"v": 2}',
                                            ("relu", "bfloat16"): '{"v": 4}'}
    with pytest.raises(ConfigError, match="no device 'elsewhere'"):
        db.save_estimator("elsewhere", "relu", "float32", "{}")


awkward = st.floats(0, 10, exclude_min=True, allow_subnormal=True) | st.sampled_from([1 / 3, 0.1, 5e-324, 1e300])
writes = st.lists(st.tuples(st.integers(1, 8), st.sampled_from(["float32", "bfloat16"]),
                            awkward), min_size=1, max_size=40)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=writes, batch=st.integers(1, 10))
def test_any_write_sequence_keeps_one_row_per_key_with_the_last_value(target, writes, batch):
    with fresh(target) as db:
        for i in range(0, len(writes), batch):  # repeated keys within and across transactions
            db.upsert([rec(n, t, dtype=dt) for n, dt, t in writes[i:i + batch]])
        last = {(n, dt): t for n, dt, t in writes}
        got = {(r.params["numel"], r.dtype): r.fwd_s for r in db.load()}
        looked = db.lookup(DEV.name, [("relu", params_key({"numel": n, "gi": 1}), dt)
                                      for n, dt in last])
    assert got == last  # exact: floats survive both backends bit for bit
    assert {(r.params["numel"], r.dtype): r.fwd_s for r in looked.values()} == last


def test_database_to_file_to_database_is_exact(db, tmp_path):
    records = [rec(n, 1 / 3 * 1e-6 * n, at=1.7e9 + n / 7) for n in range(1, 50)]
    records += [rec(1, 0.1, device=GPU), OpRecord(DEV, "conv2d", {"k": 3, "pad": "same",
                                                                  "alpha": 0.25}, "bfloat16",
                                                  5e-324, 0.0)]
    db.upsert(records)
    path = str(tmp_path / "ops.csv")
    assert export_records(db.load(), path) == len(records)
    back = import_records(path)
    assert sorted(back, key=lambda r: r.key) == sorted(records, key=lambda r: r.key)


def test_parquet_round_trip_is_exact(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (Parquet is optional)")
    records = [rec(n, 1 / 3 * 1e-6 * n) for n in range(1, 50)] + [rec(1, 0.1, device=GPU)]
    path = str(tmp_path / "ops.parquet")
    assert export_records(records, path) == 50
    assert import_records(path) == records
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(path)
    bad = table.set_column(7, "fwd_s", [[-1.0] + [1.0] * 49])
    pq.write_table(bad, path)
    with pytest.raises(ConfigError, match=r"ops.parquet, row 1: fwd_s must be a finite number"):
        import_records(path)
    pq.write_table(table.drop_columns(["dtype"]), path)
    with pytest.raises(ConfigError, match="missing column.s. dtype"):
        import_records(path)


def test_parquet_without_pyarrow_says_how_to_get_it(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyarrow(name, *a, **k):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    path = tmp_path / "ops.parquet"
    with pytest.raises(ConfigError, match="pip install pyarrow"):
        export_records([rec(1, 1.0)], str(path))
    assert not path.exists()


def test_csv_round_trip_is_exact(tmp_path):
    from dataclasses import replace
    records = [rec(n, 1 / 3 * 1e-6 * n) for n in range(1, 50)] + [
        replace(rec(1, 0.1, device=GPU), fwd_ref_s=1 / 7 * 1e-3, bwd_ref_s=2 / 7 * 1e-3)]
    path = str(tmp_path / "ops.csv")
    assert export_records(records, path) == 50
    assert import_records(path) == records
    assert os.listdir(tmp_path) == ["ops.csv"]  # the partial file was renamed, not left


def test_bound_flags_round_trip_and_old_files_read_as_measurements(tmp_path):
    from dataclasses import replace
    records = [replace(rec(1, 2e-7), fwd_bound=True), replace(rec(2, 1e-5), bwd_bound=True), rec(3, 1e-5)]
    path = str(tmp_path / "ops.csv")
    export_records(records, path)
    assert import_records(path) == records
    old = str(tmp_path / "old.csv")  # a file written before the flags existed
    with open(path, newline="") as src, open(old, "w", newline="") as dst:
        w = csv.writer(dst)
        for row in csv.reader(src):
            w.writerow(row[:len(FIELDS)])
    assert [(r.fwd_bound, r.bwd_bound) for r in import_records(old)] == [(False, False)] * 3
    with open(old, "a", newline="") as fh:
        fh.write("x\n")
    bad = str(tmp_path / "bad.csv")
    with open(path) as src, open(bad, "w") as dst:
        dst.write(src.read().replace(",1,0,0.0,0.0\n", ",2,0,0.0,0.0\n", 1))
    with pytest.raises(ConfigError, match="fwd_bound must be 0 or 1, got '2'"):
        import_records(bad)


def test_a_step_is_stored_once_per_model_batch_and_dtype_and_replaced(db):
    db.upsert([rec(1, 1e-6)])
    name = rec(1, 1e-6).device.name
    db.save_step(name, "zoo:mlp", 8, "float32", 2e-3, 1e-3)
    db.save_step(name, "zoo:mlp", 16, "float32", 5e-3, 4e-3)
    db.save_step(name, "zoo:mlp", 8, "float32", 3e-3, 1.5e-3)  # timed again: replaces
    rows = db.load_steps(name, "float32")
    assert sorted((r["batch_size"], r["step_s"], r["calls_s"]) for r in rows) == [
        (8, 3e-3, 1.5e-3), (16, 5e-3, 4e-3)]
    assert db.load_steps(name, "bfloat16") == [] and db.load_steps("another") == []
    with pytest.raises(ConfigError, match="both must be > 0"):
        db.save_step(name, "zoo:mlp", 8, "float32", 0.0, 1e-3)
    with pytest.raises(ConfigError, match="no device 'gpu'"):
        db.save_step("gpu", "zoo:mlp", 8, "float32", 1e-3, 1e-3)


def test_steps_from_elsewhere_keep_their_times_and_dates_and_bring_their_device(db):
    gpu = Device("gpu (test)", "cuda", "pytorch 2", "550")
    step = {"device": gpu, "model": "zoo:mlp", "batch_size": 8, "dtype": "float32",
            "step_s": 2 / 3, "calls_s": 0.1, "measured_at": 1.5e9}
    assert db.upsert_steps([step, dict(step, batch_size=4), dict(step, step_s=0.7)]) == 2
    assert db.devices() == [gpu]  # created with the steps, no call measured on it
    rows = sorted(db.load_steps("gpu (test)"), key=lambda r: r["batch_size"])
    assert [(r["batch_size"], r["step_s"], r["measured_at"]) for r in rows] == [
        (4, 2 / 3, 1.5e9), (8, 0.7, 1.5e9)]  # the last of a key wins; floats to the bit
    assert db.upsert_steps([]) == 0


def test_a_zero_forward_time_is_never_stored(db):
    with pytest.raises(ConfigError, match=r"refusing 1 record\(s\) with a forward time of 0 s .*upper bound"):
        db.upsert([rec(1, 1e-6), rec(2, 0.0)])
    assert db.load() == []  # the whole batch refused, nothing half-written


@pytest.mark.parametrize("version, dropped", [
    (1, ("fwd_bound", "bwd_bound", "fwd_ref_s", "bwd_ref_s")),  # before the bound flags and retests
    (2, ("fwd_ref_s", "bwd_ref_s")),  # before the references
    (3, ()),  # before the steps
])
def test_an_older_schema_is_upgraded_when_opened_and_its_rows_read_as_stored(tmp_path, version, dropped):
    from dataclasses import replace
    path = str(tmp_path / "old.sqlite")
    with open_db(path) as db:
        db.upsert([rec(1, 1e-6)])
    con = sqlite3.connect(path)  # back to the older schema: without its later columns
    con.execute("DROP TABLE steps")
    for column in dropped:
        con.execute(f"ALTER TABLE op_times DROP COLUMN {column}")
    con.execute(f"UPDATE meta SET value = '{version}' WHERE key = 'schema'")
    con.commit()
    con.close()
    with open_db(path, create=False) as db:
        assert db.load() == [rec(1, 1e-6)]
        db.upsert([replace(rec(2, 2e-6), fwd_ref_s=1e-4, bwd_ref_s=1e-4)])
        assert db.load(raw=True)[1].fwd_ref_s == 1e-4
        assert db.load_steps() == []
        db.save_step(rec(1, 1e-6).device.name, "zoo:mlp", 8, "float32", 2e-3, 1e-3)
        assert [s["step_s"] for s in db.load_steps()] == [2e-3]
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("4",)
    con.close()


def _field(index, value):
    """Edit: field ``index`` of the second data row (line 3) replaced by ``value``."""
    def edit(rows):
        rows[2][index] = value
    return edit


BAD_ROWS = [
    (_field(7, "nan"), "line 3: fwd_s must be a finite number >= 0, got 'nan'"),
    (_field(8, "-1e-6"), "line 3: bwd_s must be a finite number >= 0"),
    (_field(12, "soon"), "line 3: measured_at must be a number, got 'soon'"),
    (_field(9, "-2"), "line 3: samples must be an integer >= 0"),
    (_field(9, "2.5"), "line 3: samples must be an integer"),
    (_field(5, "{numel: 3}"), "line 3: params is not JSON"),
    (_field(5, '{"numel": NaN}'), "line 3: params is not JSON"),
    (_field(5, "[1, 2]"), "line 3: params must be a JSON object"),
    (_field(5, '{"flag": true}'), "line 3: params must be a JSON object"),
    (_field(4, ""), "line 3: op is empty"),
    (lambda rows: rows[2].pop(), "line 3: field bwd_ref_s is missing"),
    (lambda rows: rows[2].__delitem__(slice(-5, None)), "line 3: field measured_at is missing"),
    (lambda rows: rows[2].append("x"), "line 3: 18 fields, the header has 17"),
    (_field(15, "-1"), "line 3: fwd_ref_s must be a finite number >= 0"),
    (lambda rows: rows[0].__setitem__(7, "fwd"), "missing column.s. fwd_s; unknown column.s. fwd"),
    (lambda rows: rows[0].append("note"), "unknown column.s. note"),
    (lambda rows: rows[0].__setitem__(0, "op"), "column.s. op given twice"),
    (lambda rows: rows.clear(), "is empty"),
]


@pytest.mark.parametrize("edit, message", BAD_ROWS)
def test_a_bad_row_is_refused_in_one_line_naming_line_and_field(tmp_path, edit, message):
    path = str(tmp_path / "ops.csv")
    export_records([rec(1, 1e-6), rec(2, 2e-6)], path)
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(FIELDS) + ["fwd_bound", "bwd_bound", "fwd_ref_s", "bwd_ref_s"]
    edit(rows)
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(out.getvalue())
    with pytest.raises(ConfigError, match=message) as info:
        import_records(path)
    assert "\n" not in str(info.value) and str(info.value).startswith(path)


def test_default_path_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("SGDSIM_OPS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == str(tmp_path / "xdg" / "sgdsim" / "ops.sqlite")
    with pytest.raises(ConfigError, match="no operator database at"):
        open_db(None, create=False)
    open_db(None).close()  # creates the folder for writing
    assert (tmp_path / "xdg" / "sgdsim" / "ops.sqlite").is_file()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == str(tmp_path / "home" / ".local" / "share" / "sgdsim" /
                                    "ops.sqlite")
    monkeypatch.setenv("SGDSIM_OPS_DB", str(tmp_path / "env.sqlite"))
    assert default_db_path() == str(tmp_path / "env.sqlite")


def _one_line(target, create=True, match=None):
    with pytest.raises(ConfigError, match=match) as info:
        open_db(target, create=create)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_open_errors_are_one_line(tmp_path):
    missing = tmp_path / "none.sqlite"
    _one_line(str(missing), create=False, match="no operator database at")
    _one_line(f"sqlite:///{missing}", create=False, match="no operator database at")
    assert not missing.exists()  # a reader creates nothing
    _one_line(str(tmp_path), match="is a folder")
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database at all, just a long enough line of text " * 20)
    _one_line(str(text), match="file is not a database")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE x (a)")
    _one_line(str(other), match="is not an sgdsim operator database .it holds tables x.")
    _one_line("mysql://u@h/db", match="give a file path, sqlite:///FILE or postgresql")


def test_a_newer_schema_is_refused(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    open_db(path).close()
    with sqlite3.connect(path) as c:
        c.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    _one_line(path, match="schema 99, newer than this sgdsim's 4: upgrade sgdsim")


def test_passwords_are_never_printed(pg_url):
    port = pg_url.rsplit(":", 1)[1].split("/")[0]
    # A closed port: the server is unreachable.
    message = _one_line("postgresql+psycopg://user:hunter2@127.0.0.1:1/db")
    assert "hunter2" not in message and "user:***@" in message
    # A running server refusing the user: the driver's error, still without the password.
    message = _one_line(f"postgresql://nobody:s3cr@t@127.0.0.1:{port}/nodb")
    assert "s3cr" not in message and "t@127" not in message
    assert mask("postgresql://u:p@ss@h/db") == "postgresql://u:***@h/db"
    assert mask("postgresql://u@h/db?x=a@b") == "postgresql://u@h/db?x=a@b"


def test_lookups_by_device_op_and_dtype_use_an_index(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    open_db(path).close()
    with sqlite3.connect(path) as c:
        plan = " ".join(row[-1] for row in c.execute(
            "EXPLAIN QUERY PLAN SELECT fwd_s FROM op_times WHERE device_id = 1 AND op = 'mm' "
            "AND dtype = 'float32'"))
    assert "USING INDEX" in plan and "SCAN" not in plan, plan
