"""The description of one prediction, at the bottom of the import graph.

Four immutable objects, each checked once when it is built, in internal units (bytes,
seconds, bytes/s): the ``Job`` (what is trained), the ``Strategy`` (how it is distributed),
the ``Cluster`` (what it runs on) and the ``Control`` (how hard the simulator works, and the
margin of a fine interval). Parsers at the edges (``sgdsim.parse``) build them from CLI
options, a hardware file or keyword arguments; the models read them. This package imports
nothing of sgdsim but ``errors``.
"""
from .cluster import Cluster, Contention, LateComer, Link, Nodes, Stalls, TwoWayRule
from .host import Host
from .control import MODEL_ERROR_REL, NO_MARGIN, Control, Margin
from .job import Job, JobClass
from .registries import ARCHITECTURES, COLLECTIVES, EXECUTORS, MODES, ORDERS, SHARINGS, STREAMS
from .strategy import DEFAULT_RHO_THRESHOLD, Strategy

__all__ = ["ARCHITECTURES", "COLLECTIVES", "Cluster", "Contention", "Control", "DEFAULT_RHO_THRESHOLD",
           "EXECUTORS", "Host", "Job", "JobClass", "LateComer", "Link", "MODEL_ERROR_REL", "MODES", "Margin",
           "NO_MARGIN", "Nodes", "ORDERS", "SHARINGS", "STREAMS", "Stalls", "Strategy", "TwoWayRule"]
