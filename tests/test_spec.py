"""The specs: immutable, in internal units, each field checked once at construction with one
line naming it; the margin says where it came from."""
from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.errors import ConfigError
from sgdsim.parse.keywords import specs
from sgdsim.spec import (MODEL_ERROR_REL, Cluster, Contention, Control, LateComer, Link, Margin, Nodes,
                         Stalls, Strategy, TwoWayRule)
from sgdsim.spec.control import GIVEN, MEASURED

ANY = st.one_of(st.none(), st.booleans(), st.integers(-10**400, 10**400), st.floats(allow_nan=True),
                st.text(max_size=8), st.tuples(st.floats(), st.floats()))


def _one_line(build):
    try:
        build()
    except ConfigError as e:
        assert "\n" not in str(e) and str(e)
    # anything else propagates and fails the test


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from([("Link", "bandwidth_Bps"), ("Link", "flow_cap_Bps"), ("Link", "step_latency_s"),
                        ("Link", "overhead_alpha_s_per_byte"), ("LateComer", "boost"), ("LateComer", "share_cv"),
                        ("Stalls", "prob"), ("Stalls", "mean_s"), ("TwoWayRule", "penalty"),
                        ("Contention", "fcfs_weight"), ("Nodes", "gpus_per_node"), ("Nodes", "host_cores"),
                        ("Nodes", "allreduce_compute_share"), ("Control", "seed"), ("Control", "steps_per_worker"),
                        ("Control", "jitter_cv"), ("Margin", "model_error_rel"), ("Strategy", "ps_count"),
                        ("Strategy", "window_bytes"), ("Strategy", "rho_threshold")]), ANY)
def test_any_value_of_any_field_is_a_spec_or_one_line(field, value):
    cls, name = field
    base = {"Link": lambda **k: Link(**{"bandwidth_Bps": 1e9, **k}), "LateComer": LateComer, "Stalls": Stalls,
            "TwoWayRule": TwoWayRule, "Contention": Contention, "Nodes": Nodes, "Control": Control,
            "Margin": Margin, "Strategy": Strategy}[cls]
    _one_line(lambda: base(**{name: value}))


def test_bandwidth_is_bytes_per_second_inside_and_bits_at_the_edge():
    _, cluster, _ = specs(bandwidth="10Gbps", intra_bandwidth="150GB/s", gpus_per_node=8, flow_cap="1Gbps")
    assert cluster.link.bandwidth_Bps == 1.25e9 and cluster.link.flow_cap_Bps == 1.25e8
    assert cluster.nodes.intra_bandwidth_Bps == 150e9
    with pytest.raises(ConfigError, match=r"bandwidth must be between 1kbps and 1Pbps, got 100 bit/s"):
        Link(12.5)


def test_specs_are_immutable_and_hashable():
    strategy, cluster, control = specs()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cluster.link.bandwidth_Bps = 1.0
    assert hash((strategy, cluster, control)) == hash(specs())


def test_the_margin_says_where_it_came_from_not_its_value():
    """The same number given by the user is the user's (it was inferred from the float before)."""
    assert specs()[2].margin == Margin(MODEL_ERROR_REL, 0.0, MEASURED)
    assert specs(model_error=MODEL_ERROR_REL)[2].margin.source == GIVEN
    assert specs(model_error="12%")[2].margin == Margin(0.12, 0.0, GIVEN, coarse_error_rel=0.12,
                                                                 coarse_async_error_rel=0.12)


def test_contention_is_one_nested_object():
    _, cluster, _ = specs(join_boost="1.4,1.2", join_after="5ms", stall_prob=0.1, stall_mean="2ms")
    c = cluster.contention
    assert c.late_comer.boost == (1.4, 1.2) and c.late_comer.after_s == (0.005, 0.005)
    assert c.stalls.prob == (0.1, 0.1) and math.isclose(c.stalls.mean_s[0], 0.002)
    with pytest.raises(ConfigError, match="stall probability needs its mean"):
        Stalls(prob=0.1)
    with pytest.raises(ConfigError, match="cannot be combined with --flow-cap"):
        Cluster(Link(1e9, flow_cap_Bps=1e8), Contention(late_comer=LateComer(share_cv=0.2)))


def test_an_unknown_keyword_is_refused_with_the_known_ones():
    with pytest.raises(ConfigError, match="unknown keyword 'bandwith'.*bandwidth"):
        specs(bandwith="10Gbps")
