"""The three TensorFlow 1.x rules of the published tables (examples/multigpu/framework_rules.py):
which rows each one touches, the ring's slowest hop on a DGX-1, and that a what-if still wins.
Oracle for the ring: the DGX-1 P100's hybrid cube-mesh written out as its 16 NVLinks."""
import csv
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "multigpu"))
import framework_rules as fr  # noqa: E402
import published  # noqa: E402

ROWS = list(csv.DictReader(open(os.path.join(ROOT, "docs", "validation", "multigpu", "points.csv"),
                                encoding="utf-8")))
# the DGX-1 P100 NVLinks: two fully linked quads (0-3, 4-7) and i <-> i + 4
NVLINKS = {frozenset(p) for p in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3),
                                  (4, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 7),
                                  (0, 4), (1, 5), (2, 6), (3, 7)]}


def test_the_topology_has_the_dgx1_links():
    linked = {frozenset((a, b)) for a in range(8) for b in range(8) if fr.dgx1_linked(a, b)}
    assert linked == NVLINKS


@pytest.mark.parametrize("gpus", [2, 3, 4, 5, 6, 7, 8])
def test_the_ring_runs_at_its_slowest_hop(gpus):
    """NCCL 1.x's ring 0-1-...-(G-1)-0: one NVLink if every hop has one, else the PCIe path."""
    hops = {frozenset((i, (i + 1) % gpus)) for i in range(gpus)}
    want = fr.ONE_NVLINK_P100 if hops <= NVLINKS else f"{fr.PCIE3_GB_S}GB/s"
    assert fr.ring_hop_bandwidth(gpus) == want
    assert (want == fr.ONE_NVLINK_P100) == (gpus <= 4)  # one quad, or the two joined


def _changes(row):
    return fr.changes(row, published.SETUPS[row["source_id"]])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['source_id']}-{r['arch']}-{r['model']}-{r['total_gpus']}")
def test_each_rule_touches_only_its_rows(row):
    got = _changes(row)
    tf = row["source_id"].startswith("tfbench")
    assert got.get("overlap", True) is (not tf)
    ring = row["source_id"] == "tfbench-dgx1-p100" and row["arch"] == "allreduce"
    assert ("intra" in got) is ring
    host_ps = row["arch"] == "ps" and "ps_link" in published.SETUPS[row["source_id"]]
    assert ("ps_link" in got) is host_ps
    if host_ps:  # ceil(G / 2) uplinks of 12 GB/s
        assert got["ps_link"] == f"{12 * ((int(row['total_gpus']) + 1) // 2)}GB/s"


def test_only_switches_rules_off_and_back():
    row = next(r for r in ROWS if r["source_id"] == "tfbench-dgx1-p100" and r["arch"] == "allreduce"
               and r["total_gpus"] == "8")
    with fr.only("nccl1_ring"):
        assert _changes(row) == {"intra": "12GB/s"}
        with fr.only():
            assert _changes(row) == {}
    assert _changes(row) == {"overlap": False, "intra": "12GB/s"}
    with pytest.raises(ValueError, match="unknown rules"):
        with fr.only("overlap"):
            pass


def test_a_what_if_wins_over_the_rules():
    """nccl1_ring.py bisects the ring's rate: its value, not the rule's, must reach the model."""
    row = next(r for r in ROWS if r["source_id"] == "tfbench-dgx1-p100" and r["arch"] == "allreduce"
               and r["total_gpus"] == "8")
    assert published.setup_of(row)["intra"] == "12GB/s"
    with published.setup_changed("tfbench-dgx1-p100", intra="3GB/s"):
        assert published.setup_of(row)["intra"] == "3GB/s"
        with published.setup_changed("tfbench-dgx1-p100", overlap=True):
            assert published.setup_of(row)["intra"] == "3GB/s"
            assert published.setup_of(row)["overlap"] is True
        assert published.setup_of(row)["overlap"] is False
    assert published.setup_of(row)["intra"] == "12GB/s"
