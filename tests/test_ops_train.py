"""``sgdsim ops train`` never stops on bad data: rows stored as bounds are set aside and named,
a type that cannot be trained is named with what to run next, and the others are trained."""
from __future__ import annotations

import csv
import sqlite3
from dataclasses import replace

import pytest

pytest.importorskip("sqlalchemy")

from sgdsim.cli import main  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.estimator.evaluation import evaluate  # noqa: E402
from sgdsim.ops.records import learnable  # noqa: E402
from sgdsim.ops.records import Device, OpRecord  # noqa: E402

DEV = Device("cpu (1 threads, test)", "cpu", "pytorch test", "")


def relu(numel: int, **flags) -> OpRecord:
    fwd = 2e-6 + numel * 1e-9  # an exact line: any sane estimator learns it
    return OpRecord(DEV, "relu", {"numel": numel, "gi": 1}, "float32", fwd, 2 * fwd, 5, 0.01, 0.01,
                    1.0, **flags)


def gelu(numel: int, **flags) -> OpRecord:
    return replace(relu(numel, **flags), op="gelu")


@pytest.fixture
def database(tmp_path):
    path = str(tmp_path / "ops.sqlite")
    sizes = [2 ** k for k in range(6, 26)]
    with open_db(path) as db:
        # relu: 20 measurements and 4 bounds; gelu: 8 measurements and 4 bounds (too few to fit)
        db.upsert([relu(n) for n in sizes] + [relu(n + 1, fwd_bound=True) for n in sizes[:4]])
        db.upsert([gelu(n) for n in sizes[:8]] + [gelu(n + 1, fwd_bound=True) for n in sizes[:4]])
    con = sqlite3.connect(path)  # and one 0 s row an older sgdsim stored
    con.execute("UPDATE op_times SET fwd_s = 0 WHERE op = 'relu' AND params LIKE '%\"numel\":64%'")
    con.commit()
    con.close()
    return path


def test_bad_rows_are_set_aside_and_a_failing_type_does_not_stop_the_others(database, capsys):
    rc = main(["ops", "train", "--db", database, "--budget", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "rows set aside" in err and "relu/float32 5" in err  # 4 bounds and the 0 s row
    assert "not trained: gelu/float32" in err and "sgdsim ops measure --grid gelu " in err
    with open_db(database, create=False) as db:
        assert set(db.load_estimators(DEV.name)) == {("relu", "float32")}


def test_only_gelu_fails_in_one_line_with_exit_2(database, capsys):
    rc = main(["ops", "train", "--db", database, "--budget", "1", "--op", "gelu"])
    _, err = capsys.readouterr()
    assert rc == 2 and "no estimator trained" in err.strip().splitlines()[-1]


def test_a_type_with_no_rows_is_named_with_what_to_measure(database, capsys):
    rc = main(["ops", "train", "--db", database, "--budget", "1", "--op", "softmax"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "rows a type softmax (0);" in err and f"sgdsim ops measure --grid softmax --samples 30 --db {database}" in err


def test_bounds_are_not_scored_as_measurements():
    rows = [relu(64), relu(128, fwd_bound=True), relu(256, bwd_bound=True)]
    kept, aside = learnable(rows)
    assert kept == [rows[0], rows[2]] and aside == 1

    class Exact:
        def predict(self, params):
            import numpy as np
            f = np.array([2e-6 + p["numel"] * 1e-9 for p in params])
            return f, 2 * f

    bad = replace(relu(256, bwd_bound=True), bwd_s=1.0)  # a bound far off must not count
    assert evaluate(Exact(), [relu(64), bad])["bwd_max"] == pytest.approx(0.0, abs=1e-12)


def test_agreement_is_the_median_and_p90_of_relative_differences():
    from sgdsim.ops.retest import agreement
    median, p90 = agreement([1.0, 2.0, 4.0, 0.0], [1.1, 2.0, 3.0, 5.0])  # a stored 0 is not compared
    assert median == pytest.approx(0.1) and p90 == pytest.approx(0.22)


def test_retest_times_rows_again_and_stats_and_eval_show_it(tmp_path, capsys):
    pytest.importorskip("torch")
    from sgdsim.ops.estimator.report import render
    db = str(tmp_path / "ops.sqlite")
    assert main(["ops", "measure", "--grid", "relu", "--samples", "4", "--repeats", "2", "--precision", "0",
                 "--db", db, "--quiet"]) == 0
    pairs = tmp_path / "pairs.csv"
    assert main(["ops", "retest", "--samples", "3", "--db", db, "--quiet", "--rows", str(pairs)]) == 0
    capsys.readouterr()
    with open_db(db, create=False) as handle:
        (key, values), = handle.load_retests().items()
    assert key[1:] == ("relu", "float32") and values["rows"] == 3 and values["fwd_p90"] >= values["fwd_median"] >= 0
    with open(pairs) as f:  # every pair, and the stored median is theirs
        lines = list(csv.DictReader(f))
    from sgdsim.ops.retest import agreement
    assert len(lines) == 3 and {r["op"] for r in lines} == {"relu"}
    assert agreement([float(r["fwd_rel"]) for r in lines], [float(r["fwd_again_rel"]) for r in lines]) == \
        pytest.approx((values["fwd_median"], values["fwd_p90"]))
    assert all(float(r["fwd_s"]) > 0 and float(r["fwd_again_s"]) > 0 for r in lines)
    rc = main(["ops", "retest", "--samples", "3", "--db", db, "--rows", str(pairs)])  # never overwritten
    err = capsys.readouterr().err
    assert rc == 2 and "refusing to overwrite" in err and err.count("\n") == 1 and len(pairs.read_text()) > 0
    assert main(["ops", "stats", "--db", db]) == 0
    assert f"{values['fwd_median']:.1%}" in capsys.readouterr().out
    row = {"op": "relu", "dtype": "float32", "samples": 20, "held_out": 2, "arch": "L1N8", "pc": "-",
           "error": 0.1, "error_max": 0.2, "bwd_error": 0.1, "weighted_error": 0.1, "no_pc_error": 0.1,
           "no_pc_bwd_error": 0.1, "no_pc_weighted_error": 0.1, "train_s": 1, "error_median": 0.2,
           "shipped_median": 0.09, "shipped_arch": "quad"}
    assert "| relu | float32 | 9.0% (quad) | 20.0% | 10.0% | yes |" in \
        render([row], {("relu", "float32"): {"fwd_median": 0.1}})  # judged: the shipped estimator
    assert "| 9.0% (quad) | 20.0% | 5.0% | **no** |" in render([row], {("relu", "float32"): {"fwd_median": 0.05}})
    pairs.write_text("mine\n")
    assert main(["ops", "retest", "--samples", "2", "--db", db, "--quiet", "--rows", str(pairs), "--force"]) == 0
    assert pairs.read_text().startswith("op,dtype,params") and len(pairs.read_text().splitlines()) == 3
    capsys.readouterr()
    rc = main(["ops", "retest", "--db", db, "--op", "gelu"])  # a type with no rows: said, not 0 types stored
    err = capsys.readouterr().err
    assert rc == 2 and "--op gelu: no rows of it" in err and "holds relu" in err and err.count("\n") == 1


def test_retest_needs_rows_measured_on_this_machine(tmp_path, capsys):
    pytest.importorskip("torch")
    db = str(tmp_path / "ops.sqlite")
    with open_db(db) as handle:
        handle.upsert([relu(64)])  # measured on a "test" device, not here
    rc = main(["ops", "retest", "--db", db])
    err = capsys.readouterr().err
    assert rc == 2 and "a retest runs where the rows were measured" in err and err.count("\n") == 1


def test_retest_refuses_an_unknown_operator_type(database, capsys):
    rc = main(["ops", "retest", "--db", database, "--op", "relux"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown operator type 'relux'" in err and err.count("\n") == 1


def test_a_types_training_does_not_depend_on_the_other_types_asked_for(database, monkeypatch):
    """Each type's generator comes from --seed and its name, not its place in --op."""
    import sgdsim.ops.estimator.ensemble as ensemble

    def first_draws(ops: str, seed: int) -> dict:
        drawn = {}

        def spy(records, shape_dims, rng, *a, **kw):
            drawn[records[0].op] = int(rng.integers(2 ** 62))
            raise ConfigError("spied")
        monkeypatch.setattr(ensemble, "train_members", spy)
        main(["ops", "train", "--db", database, "--budget", "1", "--op", ops, "--seed", str(seed)])
        return drawn
    both, alone = first_draws("gelu,relu", 4), first_draws("relu", 4)
    assert set(both) == {"gelu", "relu"} and alone == {"relu": both["relu"]}
    assert first_draws("relu", 5)["relu"] != alone["relu"] and both["gelu"] != both["relu"]


def test_rows_without_a_parameter_their_type_reads_fail_that_type_in_one_line(tmp_path, capsys):
    path = str(tmp_path / "mm.sqlite")
    rows = [OpRecord(DEV, "mm", {"m": 8 * k, "k": 16, "n": 16, "tb": 0, "gb": 1}, "float32",
                     1e-5 * k, 2e-5 * k, 5, 0.01, 0.01, 1.0) for k in range(1, 13)]
    with open_db(path) as db:
        db.upsert(rows + [relu(2 ** k) for k in range(6, 18)])
    rc = main(["ops", "train", "--db", path, "--budget", "1"])
    _, err = capsys.readouterr()
    assert rc == 0 and "not trained: mm/float32 (mm rows lack ga" in err
    assert "Measure more" not in err  # its own message says what to run
    with open_db(path, create=False) as db:
        assert set(db.load_estimators(DEV.name)) == {("relu", "float32")}


def test_eval_writes_its_markdown_refuses_an_existing_file_and_force_overwrites(database, tmp_path, capsys):
    assert main(["ops", "train", "--db", database, "--budget", "1", "--op", "relu"]) == 0
    md = tmp_path / "eval.md"
    assert main(["ops", "eval", "--db", database, "--op", "relu", "--markdown", str(md)]) == 0
    assert "| relu |" in md.read_text()
    capsys.readouterr()
    assert main(["ops", "eval", "--db", database, "--op", "relu", "--markdown", str(md)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    md.write_text("mine\n")
    assert main(["ops", "eval", "--db", database, "--op", "relu", "--markdown", str(md), "--force"]) == 0
    assert "| relu |" in md.read_text()


def test_the_plan_line_says_how_long_training_takes():
    from sgdsim.ops.estimator_cmds import _plan_line

    assert _plan_line(17, 0, "cpu", 10.0).endswith("each fitted from its physical terms, in under a second")
    two = _plan_line(5, 2, "cpu", 10.0)
    assert "3 fitted from their physical terms, 2 searched for 10 s each" in two and two.endswith("in all")


def test_too_few_rows_in_a_precision_name_that_precision_to_measure(tmp_path, capsys):
    """A database of bfloat16 rows only: more of them is a bfloat16 grid, not a float32 one."""
    path = str(tmp_path / "bf16.sqlite")
    with open_db(path) as db:
        db.upsert([replace(relu(n), dtype="bfloat16") for n in (64, 128, 256)])
    assert main(["ops", "train", "--db", path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"sgdsim ops measure --grid all --samples 30 --dtype bfloat16 --db {path}" in err


def test_a_type_that_fails_in_a_precision_is_named_with_that_precisions_grid(tmp_path, capsys):
    """gelu fails in float32 and in bfloat16 (8 measurements and 4 bounds each): what to run
    next is a grid in each precision, one command each."""
    path = str(tmp_path / "two.sqlite")
    sizes = [2 ** k for k in range(6, 14)]
    rows = [gelu(n) for n in sizes] + [gelu(n + 1, fwd_bound=True) for n in sizes[:4]]
    with open_db(path) as db:
        db.upsert(rows + [replace(r, dtype="bfloat16") for r in rows])
    assert main(["ops", "train", "--db", path, "--budget", "1"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert (f"Measure more of gelu (sgdsim ops measure --grid gelu --samples 30 --dtype bfloat16 "
            f"--db {path}; sgdsim ops measure --grid gelu --samples 30 --db {path})") in err
