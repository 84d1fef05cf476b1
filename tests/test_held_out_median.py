"""The held-out forward median a trained estimator stores and ``sgdsim ops stats`` reads against
the type's retest median (docs/ops.md §5): what it is, recomputed from the rows it was not
fitted to, for both kinds of estimator."""
from __future__ import annotations

import numpy as np
import pytest

from sgdsim.ops.estimator.model import VALIDATION, terms_alone, train
from sgdsim.ops.estimator.prior import held_out_times
from sgdsim.ops.estimator.search import forward_median
from sgdsim.ops.optypes import REGISTRY
from sgdsim.ops.records import Device, OpRecord

DEV = Device("cpu (1 threads, test)", "cpu", "pytorch test", "")


def _noisy(op: str, n: int, seed: int, time_of) -> list[OpRecord]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        p = REGISTRY[op].sample(rng)
        t = time_of(p) * float(rng.lognormal(0.0, 0.1))
        rows.append(OpRecord(DEV, op, p, "float32", t, 2 * t, 5, 0.0, 0.0, 1.0))
    return rows


def test_forward_median_by_hand():
    pred = np.array([[1.1, 9.0], [0.8, 9.0], [2.0, 9.0], [np.nan, 9.0]])
    true = np.ones((4, 2))
    mask = np.array([[True, True], [True, True], [False, True], [True, True]])
    assert forward_median(pred, true, mask) == pytest.approx(0.15)  # rows 0 and 1: 10 % and 20 %
    assert forward_median(pred, true, np.zeros((4, 2), bool)) is None


def test_a_type_with_terms_states_its_k_fold_forward_median():
    terms = REGISTRY["mean"].prior_terms
    rows = _noisy("mean", 60, 3, lambda p: float(np.dot(terms(p, "float32", 2.0 ** 20),
                                                        [2e-6, 1e-6, 1e-9, 1e-9, 1e-9, 1e-9])))
    est = terms_alone(rows, REGISTRY["mean"].shape_dims, np.random.default_rng(11))
    fold = np.random.default_rng(11).permutation(len(rows)) % 4  # terms_alone's four folds
    pred = held_out_times(rows, True, fold)[:, 0]
    want = float(np.median(np.abs(pred / np.array([r.fwd_s for r in rows]) - 1)))
    assert est.stats["held_out_fwd_median"] == pytest.approx(want, rel=1e-12)
    assert 0.02 < want < 0.2  # the 10 % noise, not 0 and not a unit mix-up


@pytest.mark.parametrize("use_prior", [False, True])
def test_a_searched_type_states_the_forward_median_of_its_validation_rows(use_prior):
    """With a roofline prior the training targets are ratios to it; the statistic is not."""
    rows = _noisy("relu", 50, 4, lambda p: 2e-6 + p["numel"] * 1e-9)
    est = train(rows, REGISTRY["relu"].shape_dims, np.random.default_rng(5), budget_s=0.5,
                use_pc=False, arch=(1, 4), clock_stop=False, use_prior=use_prior)
    val = np.random.default_rng(5).permutation(len(rows))[:max(2, round(VALIDATION * len(rows)))]
    fwd, _ = est.predict([rows[i].params for i in val])
    want = float(np.median(np.abs(fwd / np.array([rows[i].fwd_s for i in val]) - 1)))
    assert est.stats["held_out_fwd_median"] == pytest.approx(want, rel=1e-12)
    assert want < 0.5


def test_ops_stats_reads_it_against_the_retest(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    from sgdsim.cli import main
    from sgdsim.ops.db import open_db

    db = str(tmp_path / "ops.sqlite")
    rows = _noisy("relu", 40, 6, lambda p: 2e-6 + p["numel"] * 1e-9)
    with open_db(db) as handle:
        handle.upsert(rows)
    assert main(["ops", "stats", "--db", db]) == 0  # measured, nothing trained or retested yet
    line = next(x for x in capsys.readouterr().out.splitlines() if " relu " in x)
    assert line.split()[-5:-2] == ["-", "-", "-"]
    assert main(["ops", "train", "--db", db, "--budget", "1", "--quiet"]) == 0
    trained = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("relu "))
    with open_db(db, create=False) as handle:
        handle.save_retest(DEV.name, "relu", "float32", {"rows": 40, "fwd_median": 0.08, "fwd_p90": 0.2, "bwd_p90": 0.3,
                                                        "bwd_median": 0.1, "retested_at": 0.0})
        stored = handle.load_estimators(DEV.name)[("relu", "float32")]
    import json
    held = json.loads(stored)["stats"]["held_out_fwd_median"]
    assert f"{held:.2%}" in trained.split()  # ops train prints it as it stores it
    capsys.readouterr()
    assert main(["ops", "stats", "--db", db]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if " relu " in x)
    assert line.split()[-5:-2] == [f"{held:.1%}", "8.0%", f"{held / 0.08:.2f}x"]
    assert "at most 1.5x" in out
    older = json.loads(stored)  # an estimator trained before the figure existed
    del older["stats"]["held_out_fwd_median"]
    with open_db(db, create=False) as handle:
        handle.save_estimator(DEV.name, "relu", "float32", json.dumps(older))
    assert main(["ops", "stats", "--db", db]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if " relu " in x)
    assert line.split()[-5:-2] == ["yes", "8.0%", "-"] and "at most 1.5x" not in out


def test_an_ensemble_states_its_members_mean():
    """Each member has its own validation rows; no row is held out from all of them, so the
    ensemble states the members' mean, as it does for the validation error."""
    from sgdsim.ops.estimator.ensemble import Ensemble, train_members

    rows = _noisy("relu", 50, 8, lambda p: 2e-6 + p["numel"] * 1e-9)
    ens = train_members(rows, REGISTRY["relu"].shape_dims, np.random.default_rng(9), 1.0, 3,
                        use_pc=False, arch=(1, 4), clock_stop=False)
    each = [m.stats["held_out_fwd_median"] for m in ens.members]
    assert isinstance(ens, Ensemble) and len(set(each)) == 3
    assert ens.stats["held_out_fwd_median"] == pytest.approx(np.mean(each), rel=1e-12)
    assert Ensemble.from_json(ens.to_json()).stats["held_out_fwd_median"] == ens.stats["held_out_fwd_median"]


def test_ops_stats_lists_a_corrupt_estimator_as_such(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    from sgdsim.cli import main
    from sgdsim.ops.db import open_db

    db = str(tmp_path / "ops.sqlite")
    with open_db(db) as handle:
        handle.upsert(_noisy("relu", 30, 7, lambda p: 2e-6 + p["numel"] * 1e-9))
        handle.save_estimator(DEV.name, "relu", "float32", "{not json")
    capsys.readouterr()
    assert main(["ops", "stats", "--db", db]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if " relu " in x)
    assert line.split()[-5:-2] == ["corrupt", "-", "-"]

