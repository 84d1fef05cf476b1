"""Each published source's setup maps to the host-cost fields its description implies
(examples/multigpu/host_costs.py); no result is checked here."""
import csv
import os
import sys

import pytest

from sgdsim.parse.relevance import check_relevance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "multigpu"))
import host_costs  # noqa: E402

ROWS = list(csv.DictReader(open(os.path.join(ROOT, "docs", "validation", "multigpu", "points.csv"),
                                encoding="utf-8")))


def row_of(source, model):
    return next(r for r in ROWS if r["source_id"] == source and r["model"] == model)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['source_id']}-{r['model']}-{r['total_gpus']}")
def test_every_row_has_a_setup_and_fields(row):
    s = host_costs.setup(row)
    f = host_costs.fields(s)
    assert f["transport"] in ("tcp", "rdma")
    if s["variables"] == "device":  # NCCL or GPU-side updates: no host CPU per byte
        assert f == {"transport": "rdma", **({} if s["kind"] == "ps-gpu" else {"reduce_on": "device"})}
    else:
        assert f["server_cpu"] == host_costs.MEM_PASSES / host_costs.HOST_MEMORY_BPS[s["host"]]
    check_relevance({"arch": row["arch"], "mode": "sync", **f}, "all")  # each field applies to the row


@pytest.mark.parametrize("source,model,kind", [
    ("tfbench-dgx1-p100", "resnet50", "ps-cpu"), ("tfbench-dgx1-p100", "vgg16", "nccl"),
    ("tfbench-gce-k80", "alexnet", "ps-cpu"), ("tfbench-aws-k80", "inception_v3", "ps-cpu"),
    ("tfbench-aws-k80", "resnet50", "replicated-gpu"), ("tfbench-aws-k80", "vgg16", "ps-gpu"),
    ("tfbench-aws-k80-dist", "resnet50", "distributed"), ("dle-mxnet", "resnet50", "nccl"),
    ("pytorch-ddp-readme", "resnet101", "nccl")])
def test_variable_update_per_table(source, model, kind):
    assert host_costs.setup(row_of(source, model))["kind"] == kind


def test_host_memory_ps_has_no_tcp_and_distributed_has():
    assert "tcp_cpu" not in host_costs.fields(host_costs.setup(row_of("tfbench-gce-k80", "vgg16")))
    dist = host_costs.fields(host_costs.setup(row_of("tfbench-aws-k80-dist", "inception_v3")))
    assert dist["transport"] == "tcp" and dist["tcp_cpu"] == host_costs.TCP_CPU


def test_stated_ps_counts():
    dist = [r for r in ROWS if r["source_id"] == "tfbench-aws-k80-dist"]
    counts = {(r["model"], r["batch_per_gpu"], r["nodes"]): host_costs.stated_ps_count(r) for r in dist}
    assert counts[("inception_v3", "64", "8")] == 6 and counts[("resnet152", "32", "8")] == 4
    assert counts[("resnet50", "32", "8")] == 4 and counts[("resnet50", "64", "8")] == 8
    assert all(n == int(nodes) for (_, _, nodes), n in counts.items() if nodes != "8")
