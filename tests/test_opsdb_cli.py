"""``ops list | stats | export | import`` through a throwaway parser built like the CLI's."""
from __future__ import annotations

import argparse

import pytest

pytest.importorskip("sqlalchemy")

from sgdsim.cli.common import Parser  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops import db_cmds  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.exchange import export_records  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402

DEV = Device("cpu (test)", "cpu", "pytorch test", "")


def rec(numel, fwd, op="relu", at=1.7e9):
    return OpRecord(DEV, op, {"numel": numel}, "float32", fwd, 2 * fwd, 3, 0.01, 0.0, at)


def run(*argv) -> int:
    top = argparse.ArgumentParser()
    handlers = db_cmds.register(top.add_subparsers(dest="cmd", required=True,
                                                   parser_class=Parser))
    args = top.parse_args(argv)
    return handlers[args.cmd](args)


@pytest.fixture
def dbfile(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    with open_db(path) as db:
        db.upsert([rec(n, n * 1e-6) for n in (1, 2, 3)] + [rec(1, 5e-6, op="gelu")])
    return path


def test_list_filters_and_limits(dbfile, capsys):
    assert run("list", "--db", dbfile, "--op", "relu", "--limit", "2") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["device", "op", "dtype"]
    assert [line.split()[2] for line in out[1:3]] == ["relu", "relu"]
    assert out[-1] == "... 1 more (--limit 0 shows all)"
    run("list", "--db", dbfile, "--op", "conv2d")
    assert capsys.readouterr().out.strip() == "no measurements match"
    with pytest.raises(ConfigError, match="--limit must be >= 0"):
        run("list", "--db", dbfile, "--limit", "-1")


def test_stats_shows_rows_and_median_per_type(dbfile, capsys):
    with open_db(dbfile) as db:
        db.save_estimator(DEV.name, "gelu", "float32", "{}")
    assert run("stats", "--db", dbfile) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    # device name has two words: op, dtype, rows, median µs, estimator, retest follow it
    assert [r[2:8] for r in rows] == [["gelu", "float32", "1", "5.0", "yes", "-"],
                                      ["relu", "float32", "3", "2.0", "-", "-"]]


def test_readers_refuse_a_missing_database(tmp_path):
    for cmd in ("list", "stats"):
        with pytest.raises(ConfigError, match="no operator database at"):
            run(cmd, "--db", str(tmp_path / "none.sqlite"))
    assert not (tmp_path / "none.sqlite").exists()


def test_export_then_import_into_another_database(dbfile, tmp_path, capsys):
    out = str(tmp_path / "ops.csv")
    assert run("export", out, "--db", dbfile) == 0
    other = str(tmp_path / "other.sqlite")
    with open_db(other) as db:  # one row already there, with an older value
        db.upsert([rec(2, 9.0)])
    capsys.readouterr()
    assert run("import", out, "--db", other) == 0
    assert capsys.readouterr().out.strip() == "imported 4 rows (3 new, 1 updated)"
    with open_db(dbfile) as a, open_db(other) as b:
        assert a.load() == b.load()


def test_export_never_overwrites_without_force(dbfile, tmp_path):
    out = tmp_path / "ops.csv"
    out.write_text("mine\n")
    with pytest.raises(ConfigError, match="exists; refusing to overwrite"):
        run("export", str(out), "--db", dbfile)
    assert out.read_text() == "mine\n"
    run("export", str(out), "--db", dbfile, "--force", "--op", "gelu")
    assert len(out.read_text().splitlines()) == 2  # header and the one gelu row
    with pytest.raises(ConfigError, match="no measurements match"):
        run("export", str(out), "--db", dbfile, "--force", "--op", "conv2d")
    with pytest.raises(ConfigError, match="folder .* does not exist"):
        run("export", str(tmp_path / "no" / "x.csv"), "--db", dbfile)


def test_a_bad_import_writes_nothing(dbfile, tmp_path):
    path = str(tmp_path / "bad.csv")
    export_records([rec(7, 1e-6), rec(8, 1e-6)], path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(",2e-06,", ",-2e-06,", 1))  # bwd_s of the first row
    with pytest.raises(ConfigError, match="line 2: bwd_s must be a finite number >= 0"):
        run("import", path, "--db", dbfile)
    with open_db(dbfile) as db:
        assert len(db.load()) == 4


def test_db_option_help_names_the_default(monkeypatch):
    monkeypatch.delenv("SGDSIM_OPS_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/100%data")
    p = Parser(prog="x")
    db_cmds.add_db_argument(p)
    assert "/srv/100%data/sgdsim/ops.sqlite" in " ".join(p.format_help().split())
