"""A database's timed steps shared: ``ops export --steps`` and ``ops import`` of that file, and
the calls' export saying the steps are not in it."""
from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("sqlalchemy")

from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.exchange_steps import STEP_FIELDS, import_steps  # noqa: E402
from sgdsim.ops.step_factor import device_factor  # noqa: E402
from test_opsdb_cli import DEV, rec, run  # noqa: E402

OTHER = type(DEV)("epyc (test)", "cpu", "pytorch 2", "")


@pytest.fixture
def stepdb(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    with open_db(path) as db:
        db.upsert([rec(1, 1e-6), replace(rec(2, 2e-6), device=OTHER)])
        db.save_step(DEV.name, "zoo:a", 4, "float32", 1.2, 1.0)
        db.save_step(DEV.name, "zoo:b", 8, "float32", 2.2 / 3, 1 / 3)  # not exact in decimal
        db.save_step(OTHER.name, "zoo:a", 4, "float32", 1.05, 1.0)
    return path


def test_steps_go_to_another_database_exactly_and_its_factor_is_the_same(stepdb, tmp_path, capsys):
    out = str(tmp_path / "steps.csv")
    assert run("export", out, "--steps", "--db", stepdb) == 0
    assert open(out, encoding="utf-8").readline().strip() == ",".join(STEP_FIELDS)
    other = str(tmp_path / "other.sqlite")  # an empty database: the devices come with the steps
    capsys.readouterr()
    assert run("import", out, "--db", other) == 0
    assert capsys.readouterr().out.strip() == "imported 3 timed step(s) (3 new, 0 updated)"
    with open_db(stepdb) as a, open_db(other) as b:
        assert a.load_steps() == b.load_steps()  # times and dates to the bit
        assert {d.name: d for d in b.devices()}[OTHER.name] == OTHER
        assert device_factor(b, DEV.name, "float32") == device_factor(a, DEV.name, "float32")
    assert run("import", out, "--db", other) == 0  # again: replaced, never duplicated
    assert capsys.readouterr().out.strip() == "imported 3 timed step(s) (0 new, 3 updated)"
    with open_db(other) as b:
        assert len(b.load_steps()) == 3


def test_the_filters_select_steps_and_op_is_refused(stepdb, tmp_path):
    out = tmp_path / "steps.csv"
    run("export", str(out), "--steps", "--device", OTHER.name, "--db", stepdb)
    assert [r["model"] for r in import_steps(str(out))] == ["zoo:a"]
    with pytest.raises(ConfigError, match="--op selects calls; --steps writes whole model steps"):
        run("export", str(tmp_path / "x.csv"), "--steps", "--op", "relu", "--db", stepdb)
    with pytest.raises(ConfigError, match="no timed steps match"):
        run("export", str(tmp_path / "x.csv"), "--steps", "--dtype", "bfloat16", "--db", stepdb)
    assert not (tmp_path / "x.csv").exists()


def test_exporting_the_calls_says_the_steps_are_not_in_it(stepdb, tmp_path, capsys):
    run("export", str(tmp_path / "calls.csv"), "--db", stepdb)
    assert "not in it: 3 model step(s) timed whole" in capsys.readouterr().err
    run("export", str(tmp_path / "relu.csv"), "--op", "relu", "--db", stepdb)
    assert "not in it" not in capsys.readouterr().err  # an --op export selects calls only


def test_a_database_without_steps_refuses_to_export_them(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    with open_db(path) as db:
        db.upsert([rec(1, 1e-6)])
    with pytest.raises(ConfigError, match=r"no model step timed in the database \(sgdsim ops measure --model\)"):
        run("export", str(tmp_path / "s.csv"), "--steps", "--db", path)


@pytest.mark.parametrize("field, value, message", [
    ("step_s", "0", "step_s must be > 0 s"),
    ("calls_s", "-1", "calls_s must be a finite number >= 0"),
    ("batch_size", "2.5", "batch_size must be an integer >= 1"),
    ("batch_size", "0", "batch_size must be an integer >= 1"),
    ("model", "", "model is empty"),
    ("model", "zoo:" + "m" * 509, "model is 513 characters long .at most 512."),
    ("measured_at", "soon", "measured_at must be a number"),
])
def test_a_bad_steps_file_writes_nothing(stepdb, tmp_path, field, value, message):
    path = tmp_path / "steps.csv"
    run("export", str(path), "--steps", "--db", stepdb)
    lines = path.read_text(encoding="utf-8").splitlines()
    cells = lines[2].split(",")
    cells[STEP_FIELDS.index(field)] = value
    path.write_text("\n".join([lines[0], lines[1], ",".join(cells), *lines[3:]]) + "\n", encoding="utf-8")
    other = str(tmp_path / "other.sqlite")
    with pytest.raises(ConfigError, match=f"steps.csv, line 3: {message}"):
        run("import", str(path), "--db", other)
    with open_db(other) as b:
        assert b.load_steps() == []


def test_a_steps_file_missing_a_column_is_named(tmp_path):
    path = tmp_path / "steps.csv"
    path.write_text("device_name,device_kind,device_framework,device_driver,model,batch_size,dtype,step_s\n"
                    "cpu,cpu,,,zoo:a,4,float32,1.0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="missing column.s. calls_s, measured_at"):
        run("import", str(path), "--db", str(tmp_path / "o.sqlite"))


def test_a_database_of_steps_alone_lists_them(stepdb, tmp_path, capsys):
    """Steps imported into an empty database: ops stats has no rows to show, and shows the
    steps, each with its precision (an autocast step's factor is kept apart from float32's)."""
    with open_db(stepdb) as db:
        db.save_step(DEV.name, "zoo:c", 2, "autocast-bfloat16", 1.1, 1.0)
    out, other = str(tmp_path / "steps.csv"), str(tmp_path / "other.sqlite")
    assert run("export", out, "--steps", "--db", stepdb) == 0
    assert run("import", out, "--db", other) == 0
    capsys.readouterr()
    assert run("stats", "--db", other) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "no measurements yet (sgdsim ops measure)"
    assert sum("zoo:" in x for x in lines) == 4
    assert "autocast-bfloat16" in next(x for x in lines if "zoo:c" in x).split()
