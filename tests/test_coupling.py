"""validate.coupling: the slowdowns a pair's legs were built with are the ones it fits."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sgdsim.validate.coupling import coupling, equal_share_s

# the laws both workers follow: leg -> (base s, per second of overlap with each REGRESSORS entry)
LAWS = {"compute": (0.3, 0.1, 0.0), "pull": (0.4, 0.05, 0.0), "push": (0.4, 0.05, 0.02)}


def _overlap(a, b, spans):
    return sum(max(0.0, min(b, d) - max(a, c)) for c, d in spans)


def _end(start, work, other_spans, same):
    """The end e at which the leg from ``start`` has done ``work``: its own time (under equal
    sharing with ``same``) less the slowdowns of its overlaps with ``other_spans``."""
    lo, hi = start, start + 10.0
    # spans outside [lo, hi] overlap no e in it: leaving them out changes no sum, only the time
    near = lambda spans: [(c, d) for c, d in spans if d > lo and c < hi]  # noqa: E731
    other_spans = [(k, near(spans)) for k, spans in other_spans]
    same = None if same is None else near(same)
    for _ in range(48):  # to 10 s / 2^48 = 4e-14 s: far below what the fit resolves (2e-4)
        e = (lo + hi) / 2
        own = equal_share_s((start, e), same) if same is not None else e - start
        done = own - sum(k * _overlap(start, e, spans) for k, spans in other_spans)
        lo, hi = (e, hi) if done < work else (lo, e)
    return (lo + hi) / 2


def _worker(gaps, other):
    pulls, pushes = [s[0] for s in other], [s[1] for s in other]
    computes = [(s[0][1], s[1][0]) for s in other]
    base = {leg: law[0] for leg, law in LAWS.items()}
    k = {leg: law[1:] for leg, law in LAWS.items()}
    steps, t = [], 0.0
    for gap in gaps:
        p0 = t + gap
        p1 = _end(p0, base["pull"], [(k["pull"][0], computes), (k["pull"][1], pushes)], pulls)
        q0 = _end(p1, base["compute"], [(k["compute"][0], pulls), (k["compute"][1], pushes)], None)
        q1 = _end(q0, base["push"], [(k["push"][0], computes), (k["push"][1], pulls)], pushes)
        steps.append(((p0, p1), (q0, q1)))
        t = q1
    return steps


def _pair(seed=0, steps=40, workers=2):
    rng = np.random.default_rng(seed)
    gaps = [rng.uniform(0.0, 0.6, steps) for _ in range(workers)]
    built = [_worker(g, []) for g in gaps]
    for _ in range(100):  # each built against the others until all obey the laws together
        before = list(built)
        for w, g in enumerate(gaps):
            built[w] = _worker(g, [s for v, steps in enumerate(built) if v != w for s in steps])
        if np.allclose(np.array(built, float), np.array(before, float), atol=1e-9, rtol=0):
            return dict(enumerate(built))
    raise AssertionError("the workers did not settle")


def test_equal_share_time_counts_a_shared_stretch_at_half():
    assert equal_share_s((0.0, 1.0), []) == pytest.approx(1.0)
    assert equal_share_s((0.0, 1.0), [(0.5, 2.0)]) == pytest.approx(0.75)
    # alone 0.2 s, with one 0.1, with two 0.1, with one 0.2, alone 0.4
    assert equal_share_s((0.0, 1.0), [(0.2, 0.4), (0.3, 0.6)]) == pytest.approx(0.2 + 0.1 / 2 + 0.1 / 3 + 0.2 / 2 + 0.4)


def test_coupling_recovers_the_slowdowns_the_pair_was_built_with():
    fit = coupling([_pair(steps=20)])
    for leg, law in LAWS.items():
        coef, se, n = fit[leg]
        assert n == 40
        assert coef == pytest.approx(law, abs=2e-4), leg


def test_with_three_workers_the_others_overlaps_add_up():
    """Each worker slowed by both others' transfers (overlaps summed): the fit recovers it."""
    fit = coupling([_pair(seed=1, steps=15, workers=3)])  # exact data: 45 steps pin 3 coefficients
    for leg, law in LAWS.items():
        coef, se, n = fit[leg]
        assert n == 45
        assert coef == pytest.approx(law, abs=2e-4), leg


def test_coupling_of_too_few_steps_is_nan():
    pair = _pair(steps=1)
    assert all(math.isnan(x) for x in coupling([pair])["compute"][0])
