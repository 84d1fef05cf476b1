"""The coarse profile: what the analytical models need (TPDS §2.1.2), for users without a trace.

Model size M, forward S^F, backward S^B and PS-update S^S times per step, batch size, and
whether communication overlaps computation. From a JSON file, from ``--coarse
size=102MB,fwd=182ms,bwd=261ms,batch=128[,update=5ms][,overlap=1][,messages=N]``, or derived
from a fine-grained profile. ``messages``: how many separate transfers (layers with parameters)
a step makes, which matters where each pays a fixed cost (a collective's ring latency).
``to_profile`` turns it into a step DAG so that the simulator can run on it too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ProfileError
from ..tagged_json import read_tagged
from ..profile.model import (COMM, DOWNLINK, MAX_BATCH_SIZE, MAX_DURATION_S, MAX_SIZE_BYTES, PS,
                             UPLINK, WORKER, Job, Op, Profile)
from ..units import bare_number, parse_duration_s, parse_size_bytes


@dataclass(frozen=True)
class CoarseProfile:
    model_bytes: float  # M
    forward_s: float  # S^F
    backward_s: float  # S^B
    update_s: float  # S^S
    batch_size: int
    overlap: bool = False
    name: str = "coarse"
    messages: int = 1  # separate transfers per step (layers with parameters): calls of a collective

    @property
    def compute_s(self) -> float:
        """S^W = S^F + S^B."""
        return self.forward_s + self.backward_s

    def check_has_work(self) -> None:
        """The analytical models divide by the step's work: a step of nothing has no throughput."""
        if self.compute_s + self.update_s <= 0 and self.model_bytes <= 0:
            raise ProfileError(f"{self.name}: a step takes no time (all durations and sizes are 0)")


_KEYS = {"size": "model_bytes", "fwd": "forward_s", "bwd": "backward_s", "update": "update_s",
         "batch": "batch_size", "overlap": "overlap", "name": "name", "messages": "messages"}


def parse_coarse(spec: str) -> CoarseProfile:
    """``size=102MB,fwd=182ms,bwd=261ms,batch=128[,update=5ms][,overlap=1][,name=x][,messages=N]``."""
    fields: dict[str, str] = {}
    for part in spec.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or key not in _KEYS:
            raise ProfileError(f"bad --coarse item {part.strip()!r} (keys: {', '.join(_KEYS)})")
        if key in fields:
            raise ProfileError(f"--coarse gives {key}= twice")
        fields[key] = value.strip()
    return _build(fields, "--coarse")


def load_coarse(path: str) -> CoarseProfile:
    """A JSON object with the same keys as ``--coarse`` (values may carry units)."""
    data = read_tagged(path, "sgdsim-coarse", "coarse profile", ProfileError)
    unknown = set(data) - set(_KEYS) - {"format"}
    if unknown:
        raise ProfileError(f"coarse profile {path}: unknown field {sorted(unknown)[0]!r}")
    return _build({k: str(v) for k, v in data.items() if k != "format"}, f"coarse profile {path}")


def _build(fields: dict[str, str], where: str) -> CoarseProfile:
    for key in ("size", "fwd", "bwd", "batch"):
        if key not in fields:
            raise ProfileError(f"{where}: missing {key}= (need size, fwd, bwd, batch)")
    try:
        batch = int(fields["batch"]) if fields["batch"].strip().isascii() else int("x")
    except ValueError:
        raise ProfileError(f"{where}: batch must be an integer, got {fields['batch']!r}") from None
    if not 1 <= batch <= MAX_BATCH_SIZE:
        raise ProfileError(f"{where}: batch must be from 1 to {MAX_BATCH_SIZE:,}, got {batch}")
    messages = fields.get("messages", "1")
    if not (messages.isascii() and messages.isdigit() and len(messages) <= 7) or not 1 <= int(messages) <= 10**6:
        raise ProfileError(f"{where}: messages must be a positive integer, got {messages!r}")
    for key in ("fwd", "bwd", "update"):
        if key in fields and bare_number(fields[key]):
            raise ProfileError(f"{where}: {key}={fields[key]} has no unit (write e.g. "
                               f"{key}={fields[key]}ms or {key}={fields[key]}s)")
    for key, top in (("fwd", MAX_DURATION_S), ("bwd", MAX_DURATION_S), ("update", MAX_DURATION_S)):
        if key in fields and parse_duration_s(fields[key]) > top:
            raise ProfileError(f"{where}: {key}={fields[key]} is above the limit of {top:g} s")
    if parse_size_bytes(fields["size"]) > MAX_SIZE_BYTES:
        raise ProfileError(f"{where}: size={fields['size']} is above the limit of 1PB")
    return CoarseProfile(
        model_bytes=parse_size_bytes(fields["size"]), forward_s=parse_duration_s(fields["fwd"]),
        backward_s=parse_duration_s(fields["bwd"]),
        update_s=parse_duration_s(fields.get("update", "0s")), batch_size=batch,
        overlap=fields.get("overlap", "0").lower() in ("1", "true", "yes"),
        name=fields.get("name", "coarse"), messages=int(messages))


def from_profile(profile: Profile) -> CoarseProfile:
    """Service times of TPDS §2.1.2 from a fine profile: M = downlink bytes, means of the
    forward and backward compute (ops named ``fwd:``/``bwd:``; otherwise split evenly)."""
    d = profile.durations_s.mean(axis=0)
    fwd = bwd = other = 0.0
    for i, op in enumerate(profile.ops):
        if op.resource != WORKER:
            continue
        if op.id.startswith("fwd"):
            fwd += d[i]
        elif op.id.startswith("bwd"):
            bwd += d[i]
        else:
            other += d[i]
    update = float(sum(d[i] for i, op in enumerate(profile.ops) if op.resource == PS))
    return CoarseProfile(
        model_bytes=profile.model_bytes(), forward_s=float(fwd + other / 2),
        backward_s=float(bwd + other / 2), update_s=update, batch_size=profile.job.batch_size,
        overlap=bool(profile.job.overlap), name=profile.job.model,
        messages=max(1, sum(op.resource == UPLINK and op.size_bytes > 0 for op in profile.ops)))


def to_profile(c: CoarseProfile) -> Profile:
    """A no-overlap step DAG with the coarse profile's times (for the simulator): the model in
    ``messages`` equal parts, each pulled, pushed and updated on its own."""
    n = c.messages
    parts = ["model"] if n == 1 else [f"part{i}" for i in range(n)]
    size = c.model_bytes / n
    downs = [Op(f"down:{x}", x, x, COMM, DOWNLINK, (), 0, size) for x in parts]
    ops = (*downs,
           Op("fwd:model", "forward", "model", "compute", WORKER, tuple(d.id for d in downs)),
           Op("bwd:model", "backward", "model", "compute", WORKER, ("fwd:model",)),
           *[Op(f"up:{x}", x, x, COMM, UPLINK, ("bwd:model",), 0, size) for x in parts],
           *[Op(f"upd:{x}", "update", x, "compute", PS, (f"up:{x}",)) for x in parts])
    durations = np.array([[0.0] * n + [c.forward_s, c.backward_s] + [0.0] * n
                          + [c.update_s / n] * n])
    return Profile(Job(c.name, c.batch_size, "coarse", "unknown", None, False, "coarse"), ops, durations)
