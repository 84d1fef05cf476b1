"""Clusters of multi-device nodes (issue 12): where a step's transfers travel.

- ``model.py``: ``Topology``, nodes of G devices, an intra-node link per device, one NIC per node.
- ``collectives/``: the all-reduce algorithms, one file each plus one registry line.
- ``buckets.py``: PyTorch DDP's gradient buckets as a ``Profile -> Profile`` transform.
- ``hosts.py``: workers sharing one host's cores (the lab), compute slowed in sync training.
"""
from .buckets import DDP_FIRST_BUCKET_BYTES, bucket_sizes, even_buckets, with_buckets
from .collectives import COLLECTIVES, allreduce_s
from .hosts import compute_slowdown, shared_cores, slowed_classes
from .model import Topology

__all__ = ["COLLECTIVES", "DDP_FIRST_BUCKET_BYTES", "Topology", "allreduce_s", "bucket_sizes", "compute_slowdown", "shared_cores", "even_buckets", "slowed_classes", "with_buckets"]
