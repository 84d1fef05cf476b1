"""``Ensemble`` (``sgdsim ops train --members K``): the median of K trainings, stored and
loaded as one estimator, used wherever one is."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("sqlalchemy")

from estimator_support import MM_DIMS, matmul_like, relu_like  # noqa: E402

from sgdsim.cli import main  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.db import open_db  # noqa: E402
from sgdsim.ops.estimate import load_estimators  # noqa: E402
from sgdsim.ops.estimator.ensemble import Ensemble, estimator_from_json, train_members  # noqa: E402
from sgdsim.ops.estimator.model import OpEstimator, train  # noqa: E402


@pytest.fixture(scope="module")
def trio():
    records = matmul_like(60, seed=5)
    ens = train_members(records, MM_DIMS, np.random.default_rng(3), 3.0, members=3, clock_stop=False)
    return ens, records


def test_prediction_is_the_middle_member_and_one_wild_member_is_outvoted(trio):
    ens, records = trio
    params = [r.params for r in records]
    assert isinstance(ens, Ensemble) and len(ens.members) == 3
    fwd = np.array([m.predict(params)[0] for m in ens.members])
    bwd = np.array([m.predict(params)[1] for m in ens.members])
    middle = lambda a: [sorted(col)[1] for col in a.T]  # noqa: E731
    got_f, got_b = ens.predict(params)
    assert np.array_equal(got_f, middle(fwd)) and np.array_equal(got_b, middle(bwd))
    wild = ens.members[0]
    saved = wild.y_mean.copy()
    try:
        wild.y_mean = wild.y_mean + np.log(100.0)  # one member 100x too slow everywhere
        again_f, _ = ens.predict(params)
        others = fwd[1:]
        assert ((again_f >= others.min(axis=0)) & (again_f <= others.max(axis=0))).all()
    finally:
        wild.y_mean = saved


def test_members_see_other_validation_splits_and_share_the_budget(trio):
    ens, _ = trio
    states = [json.dumps(m.stats["rng_state"], sort_keys=True) for m in ens.members]
    assert len(set(states)) == 3
    assert all(m.stats["budget_s"] == pytest.approx(1.0) for m in ens.members)
    errs = [m.stats["validation_error"] for m in ens.members]
    assert ens.stats["validation_error"] == pytest.approx(np.mean(errs))
    assert ens.stats["arch"] == "3x" and len(ens.stats["members"]) == 3


def test_json_round_trip_and_the_format_picks_the_class(trio):
    ens, records = trio
    params = [r.params for r in records]
    again = estimator_from_json(ens.to_json())
    assert isinstance(again, Ensemble) and again.to_json() == ens.to_json()
    for ours, theirs in zip(ens.predict(params), again.predict(params)):
        assert np.allclose(ours, theirs, rtol=1e-12)
    single = ens.members[0]
    assert isinstance(estimator_from_json(single.to_json()), OpEstimator)
    broken = json.loads(ens.to_json())
    broken["members"] = broken["members"][:1]
    with pytest.raises(ConfigError, match="ensemble: 1 members"):
        estimator_from_json(json.dumps(broken))


def test_one_member_is_the_plain_training():
    records = matmul_like(40, seed=2)
    one = train_members(records, MM_DIMS, np.random.default_rng(9), 1.0, members=1, clock_stop=False)
    plain = train(records, MM_DIMS, np.random.default_rng(9), 1.0, clock_stop=False)
    assert isinstance(one, OpEstimator) and one.to_json() == plain.to_json()
    with pytest.raises(ConfigError, match="members must be in 1..16"):
        train_members(records, MM_DIMS, np.random.default_rng(9), 1.0, members=0)


def test_a_backward_every_member_puts_at_zero_stays_zero(trio):
    ens, records = trio
    params = [r.params for r in records[:10]]
    for m in ens.members:  # as for a call whose inputs need no gradient
        m.zero_bwd = (("tb", "1"),)
    try:
        fwd, bwd = ens.predict(params)
        flagged = np.array([str(p["tb"]) == "1" for p in params])
        assert flagged.any() and (~flagged).any()
        assert (bwd[flagged] == 0).all() and (bwd[~flagged] > 0).all() and (fwd > 0).all()
    finally:
        for m in ens.members:
            m.zero_bwd = ()


def test_ops_train_members_stores_an_ensemble_that_estimates_load(tmp_path, capsys):
    path = str(tmp_path / "ops.sqlite")
    with open_db(path) as db:
        db.upsert(relu_like(40, seed=1))
    rc = main(["ops", "train", "--db", path, "--budget", "2", "--members", "2", "-q"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "2x" in out
    with open_db(path, create=False) as db:
        (device,) = [d.name for d in db.devices()]
        (est,) = load_estimators(db, device).values()
    assert isinstance(est, Ensemble) and len(est.members) == 2
    assert main(["ops", "train", "--db", path, "--budget", "2", "--members", "17"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--members must be in 1..16, got 17" in err[0]
