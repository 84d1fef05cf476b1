"""The profile: inert data describing one worker's SGD step as an operation DAG.

A profile holds job metadata and S profiled steps over one DAG. The DAG (ops and their
dependencies) is the same for every step; compute durations vary per step. Comm ops carry a
size in bytes (their duration is derived from the bandwidth at prediction time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

FORMAT_NAME = "sgdsim-profile"
FORMAT_VERSION = 1

COMPUTE = "compute"
COMM = "comm"
KINDS = (COMPUTE, COMM)

DOWNLINK, WORKER, UPLINK, PS = "downlink", "worker", "uplink", "ps"
RESOURCES = (DOWNLINK, WORKER, UPLINK, PS)
COMM_RESOURCES = (DOWNLINK, UPLINK)
COMPUTE_RESOURCES = (WORKER, PS)


# Beyond these a value is a typo or an overflow waiting to happen (durations summed over
# thousands of steps, counts multiplied by worker counts); docs/profile-format.md.
MAX_DURATION_S = 1e6  # 11.6 days for one op
MAX_SIZE_BYTES = 1e15  # 1 PB in one message
MAX_BATCH_SIZE = 10**9
MAX_PS_INDEX = 1023

@dataclass(frozen=True)
class Op:
    """One operation of the step DAG.

    ``ps`` is the parameter-server index for downlink/uplink/ps ops (0 when there is one PS).
    ``size_bytes`` is set for comm ops only; compute durations live in ``Profile.durations_s``.
    """

    id: str
    name: str
    layer: str
    kind: str
    resource: str
    deps: tuple[str, ...] = ()
    ps: int = 0
    size_bytes: float = 0.0


@dataclass(frozen=True)
class Job:
    model: str
    batch_size: int
    framework: str = "unknown"
    device: str = "unknown"
    bandwidth_bps: float | None = None  # bandwidth in force while profiling, if known
    overlap: bool | None = None  # does communication overlap computation in this DAG?
    source: str = ""


@dataclass(frozen=True, eq=False)
class Profile:
    """Job metadata, ops in a fixed order, and per-step compute durations.

    ``durations_s`` has shape (S, n_ops); entries of comm ops are 0 (unused).
    ``comm_s`` optionally holds recorded comm timings, same shape, NaN where unknown.
    """

    job: Job
    ops: tuple[Op, ...]
    durations_s: np.ndarray
    comm_s: np.ndarray | None = None
    version: int = FORMAT_VERSION
    extra: dict = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.durations_s.shape[0])

    @property
    def n_ops(self) -> int:
        return len(self.ops)

    def index(self) -> dict[str, int]:
        return {op.id: i for i, op in enumerate(self.ops)}

    @cached_property  # ops is a tuple of frozen ops: what is derived from it never changes
    def ps_count(self) -> int:
        return 1 + max((op.ps for op in self.ops), default=0)

    def model_bytes(self) -> float:
        """Bytes a worker downloads per step (the model size M of the papers)."""
        return self._model_bytes

    @cached_property
    def _model_bytes(self) -> float:
        return float(sum(op.size_bytes for op in self.ops if op.resource == DOWNLINK))

    def mean_compute_s(self, resource: str = WORKER) -> float:
        """Mean per-step total duration of compute ops on ``resource``."""
        cols = [i for i, op in enumerate(self.ops) if op.resource == resource]
        if not cols:
            return 0.0
        return float(self.durations_s[:, cols].sum(axis=1).mean())
