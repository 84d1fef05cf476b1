import numpy as np
import pytest

import sgdsim
from sgdsim.errors import ConfigError

PROFILE = "examples/profiles/alexnet.json"
KW = dict(workers=3, bandwidth="1Gbps", steps=20, warmup=3)


def test_replications_average_independent_seeds():
    reps = [sgdsim.predict(PROFILE, seed=7 + i * 1_000_003, **KW)[0] for i in range(3)]
    pt = sgdsim.predict(PROFILE, seed=7, replications=3, **KW)[0]
    xs = np.array([r.throughput for r in reps])
    assert pt.throughput == pytest.approx(xs.mean(), rel=1e-12)
    hw = 4.303 * xs.std(ddof=1) / np.sqrt(3)  # Student t, 2 degrees of freedom
    assert pt.ci_high - pt.throughput == pytest.approx(hw, rel=1e-9)
    assert pt.ops_simulated == sum(r.ops_simulated for r in reps)


def test_replications_of_a_deterministic_sync_run_have_zero_width():
    pt = sgdsim.predict(PROFILE, mode="sync", sharing="ps", replications=3, **KW)[0]
    assert pt.ci_high == pytest.approx(pt.ci_low, abs=1e-9)


def test_replications_must_be_positive():
    with pytest.raises(ConfigError):
        sgdsim.predict(PROFILE, replications=0, **KW)
