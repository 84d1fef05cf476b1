"""Validation of a parsed profile document: every problem one ``ProfileError`` line naming
the file, the op and the field (docs/profile-format.md, "Validation and error messages")."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ProfileError
from .model import (COMM, COMM_RESOURCES, COMPUTE_RESOURCES, FORMAT_NAME, KINDS,
                    MAX_BATCH_SIZE, MAX_DURATION_S, MAX_PS_INDEX, MAX_SIZE_BYTES, RESOURCES, Job,
                    Op, Profile)

SUPPORTED_VERSIONS = (1,)
UNITS = {"time": "s", "size": "bytes", "bandwidth": "bit/s"}
TOP_KEYS = ("format", "version", "job", "ops", "steps")
_JOB_KEYS = ("model", "batch_size", "framework", "device", "bandwidth_bps", "overlap",
             "source", "units")
_OP_KEYS = ("id", "name", "layer", "kind", "resource", "ps", "size_bytes", "deps")


def profile_from_dict(d: object, source_name: str = "<dict>") -> Profile:
    """Validate a parsed profile document and build the ``Profile``; ``ProfileError`` if bad."""
    fail = _Failer(source_name)
    if not isinstance(d, dict):
        fail.top(f"top level must be a JSON object, got {_tname(d)}")
    _check_header(d, fail)
    job = _parse_job(d.get("job"), fail)
    ops = _parse_ops(d.get("ops"), fail)
    _check_acyclic(ops, fail)
    _check_ps_numbering(ops, fail)
    durations_s, comm_s = _parse_steps(d.get("steps"), ops, fail)
    extra = {k: v for k, v in d.items() if k not in TOP_KEYS}
    return Profile(job=job, ops=tuple(ops), durations_s=durations_s, comm_s=comm_s,
                   version=int(d["version"]), extra=extra)


# ----------------------------------------------------------------------------- errors

class _Failer:
    """Formats the single-line messages; each method raises."""

    def __init__(self, source: str):
        self.source = source

    def top(self, msg: str):
        raise ProfileError(f"profile {self.source}: {msg}")

    def op(self, op_id: str, msg: str):
        raise ProfileError(f"profile {self.source}: op {op_id!r}: {msg}")


def _tname(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_problem(value: object, top: float = math.inf) -> str | None:
    """Why ``value`` is not a finite number in [0, top], or None when it is one."""
    if not _is_number(value):
        return f"is not a number ({value!r})"
    if isinstance(value, int) and abs(value) > 2**1023:  # math.isnan would overflow on it
        return f"is not finite ({str(value)[:20]}...)"
    if math.isnan(value):
        return "is NaN"
    if math.isinf(value):
        return f"is not finite ({value!r})"
    if value < 0:
        return f"is negative ({value!r})"
    if value > top:
        return f"is {value!r}, above the limit of {top:g}"
    return None


# ----------------------------------------------------------------------------- header and job

def _check_header(d: dict, fail: _Failer) -> None:
    if d.get("format") != FORMAT_NAME:
        fail.top(f"format is {d.get('format')!r}, expected {FORMAT_NAME!r}")
    version = d.get("version")
    if not _is_number(version) or version not in SUPPORTED_VERSIONS:
        fail.top(f"version {version!r} is not supported (supported: "
                 f"{', '.join(map(str, SUPPORTED_VERSIONS))})")


def _parse_job(job: object, fail: _Failer) -> Job:
    if not isinstance(job, dict):
        fail.top(f"job must be an object, got {_tname(job)}")
    for key in job:
        if key not in _JOB_KEYS:
            fail.top(f"job has unknown field {key!r}")
    model = job.get("model")
    if not isinstance(model, str) or not model:
        fail.top(f"job.model must be a non-empty string (got {model!r})")
    batch = job.get("batch_size")
    if not isinstance(batch, int) or isinstance(batch, bool) or not 0 < batch <= MAX_BATCH_SIZE:
        fail.top(f"job.batch_size must be an integer from 1 to {MAX_BATCH_SIZE:,} (got {batch!r})")
    for key in ("framework", "device", "source"):
        if not isinstance(job.get(key, ""), str):
            fail.top(f"job.{key} must be a string (got {job[key]!r})")
    bandwidth = job.get("bandwidth_bps")
    if bandwidth is not None and (_number_problem(bandwidth) or bandwidth == 0):
        fail.top(f"job.bandwidth_bps must be a positive number or null (got {bandwidth!r})")
    overlap = job.get("overlap")
    if overlap is not None and not isinstance(overlap, bool):
        fail.top(f"job.overlap must be true, false or null (got {overlap!r})")
    _check_units(job.get("units", UNITS), fail)
    return Job(model=model, batch_size=batch, framework=job.get("framework", "unknown"),
               device=job.get("device", "unknown"),
               bandwidth_bps=None if bandwidth is None else float(bandwidth),
               overlap=overlap, source=job.get("source", ""))


def _check_units(units: object, fail: _Failer) -> None:
    # Units are fixed; the field exists so that a reader of the file knows them, and so that a
    # converter that wrote milliseconds is caught instead of silently scaled by 1000.
    if not isinstance(units, dict):
        fail.top(f"job.units must be an object (got {_tname(units)})")
    for key, value in units.items():
        if key not in UNITS:
            fail.top(f"job.units has unknown unit {key!r}")
        if value != UNITS[key]:
            fail.top(f"job.units.{key} is {value!r}; only {UNITS[key]!r} is supported")


# ----------------------------------------------------------------------------- ops

def _parse_ops(ops: object, fail: _Failer) -> list[Op]:
    if not isinstance(ops, list) or not ops:
        fail.top(f"ops must be a non-empty list (got {_tname(ops) if ops != [] else 'empty'})")
    parsed: list[Op] = []
    seen: set[str] = set()
    for i, raw in enumerate(ops):
        op = _parse_op(i, raw, fail)
        if op.id in seen:
            fail.op(op.id, f"id is duplicated (ops[{i}])")
        seen.add(op.id)
        parsed.append(op)
    for op in parsed:
        for dep in op.deps:
            if dep not in seen:
                fail.op(op.id, f"deps names unknown op {dep!r}")
    return parsed


def _parse_op(i: int, raw: object, fail: _Failer) -> Op:
    if not isinstance(raw, dict):
        fail.top(f"ops[{i}] must be an object, got {_tname(raw)}")
    op_id = raw.get("id")
    if not isinstance(op_id, str) or not op_id:
        fail.top(f"ops[{i}]: id is missing or not a non-empty string ({op_id!r})")
    for key in raw:
        if key not in _OP_KEYS:
            fail.op(op_id, f"unknown field {key!r}")
    for key in ("name", "layer"):
        if not isinstance(raw.get(key, ""), str):
            fail.op(op_id, f"{key} must be a string (got {raw[key]!r})")
    kind, resource = raw.get("kind"), raw.get("resource")
    if kind not in KINDS:
        fail.op(op_id, f"kind {kind!r} is unknown (expected one of {', '.join(KINDS)})")
    if resource not in RESOURCES:
        fail.op(op_id, f"resource {resource!r} is unknown (expected one of {', '.join(RESOURCES)})")
    allowed = COMM_RESOURCES if kind == COMM else COMPUTE_RESOURCES
    if resource not in allowed:
        fail.op(op_id, f"resource {resource!r} does not match kind {kind!r} "
                       f"(a {kind} op runs on {' or '.join(allowed)})")
    ps = raw.get("ps", 0)
    if not isinstance(ps, int) or isinstance(ps, bool) or not 0 <= ps <= MAX_PS_INDEX:
        fail.op(op_id, f"ps must be an integer from 0 to {MAX_PS_INDEX} (got {ps!r})")
    return Op(id=op_id, name=raw.get("name", op_id), layer=raw.get("layer", ""), kind=kind,
              resource=resource, deps=_parse_deps(op_id, raw.get("deps", []), fail), ps=ps,
              size_bytes=_parse_size(op_id, kind, raw, fail))


def _parse_size(op_id: str, kind: str, raw: dict, fail: _Failer) -> float:
    if kind != COMM:
        if raw.get("size_bytes", 0) != 0:
            fail.op(op_id, "size_bytes is only allowed on comm ops")
        return 0.0
    if "size_bytes" not in raw:
        fail.op(op_id, "size_bytes is missing (required on comm ops)")
    problem = _number_problem(raw["size_bytes"], MAX_SIZE_BYTES)
    if problem:
        fail.op(op_id, f"size_bytes {problem}")
    return float(raw["size_bytes"])


def _parse_deps(op_id: str, deps: object, fail: _Failer) -> tuple[str, ...]:
    if not isinstance(deps, list):
        fail.op(op_id, f"deps must be a list of op ids (got {_tname(deps)})")
    for dep in deps:
        if not isinstance(dep, str):
            fail.op(op_id, f"deps entry {dep!r} is not an op id string")
    if len(set(deps)) != len(deps):
        dup = next(d for d in deps if deps.count(d) > 1)
        fail.op(op_id, f"deps lists {dup!r} twice")
    return tuple(deps)


def _check_ps_numbering(ops: list[Op], fail: _Failer) -> None:
    """The PS count is the highest index + 1: a gap would count servers that hold nothing."""
    used = {op.ps for op in ops}
    missing = sorted(set(range(max(used, default=0) + 1)) - used)
    if missing:
        op = max(ops, key=lambda o: o.ps)
        fail.op(op.id, f"ps {op.ps} leaves parameter server {missing[0]} with nothing "
                       f"(number the servers 0..K-1 without gaps)")


def _check_acyclic(ops: list[Op], fail: _Failer) -> None:
    """Kahn's algorithm; on failure name one op that lies on a cycle, with the cycle."""
    waiting = {op.id: len(op.deps) for op in ops}
    dependents: dict[str, list[str]] = {op.id: [] for op in ops}
    for op in ops:
        for dep in op.deps:
            dependents[dep].append(op.id)
    ready = [op_id for op_id, n in waiting.items() if n == 0]
    while ready:
        for nxt in dependents[ready.pop()]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    stuck = {op_id for op_id, n in waiting.items() if n > 0}
    if stuck:
        cycle = _find_cycle(stuck, {op.id: op.deps for op in ops})
        fail.op(cycle[0], f"deps form a cycle ({' -> '.join(cycle + [cycle[0]])})")


def _find_cycle(stuck: set[str], deps: dict[str, tuple[str, ...]]) -> list[str]:
    # Every op left over by Kahn's algorithm waits on another left-over op, so following
    # such deps must revisit an op; the path from its first visit is a cycle.
    path: list[str] = []
    pos: dict[str, int] = {}
    node = min(stuck)
    while node not in pos:
        pos[node] = len(path)
        path.append(node)
        node = next(d for d in deps[node] if d in stuck)
    return path[pos[node]:]


# ----------------------------------------------------------------------------- steps

def _parse_steps(steps: object, ops: list[Op], fail: _Failer):
    if not isinstance(steps, list) or not steps:
        fail.top(f"steps must be a non-empty list (got {_tname(steps) if steps != [] else 'empty'})")
    index = {op.id: i for i, op in enumerate(ops)}
    durations_s = np.zeros((len(steps), len(ops)))
    comm_s = np.full((len(steps), len(ops)), np.nan)
    has_comm = False
    for s, step in enumerate(steps):
        if not isinstance(step, dict):
            fail.top(f"step {s} must be an object, got {_tname(step)}")
        for key in step:
            if key not in ("duration_s", "comm_s"):
                fail.top(f"step {s} has unknown field {key!r}")
        _fill_durations(s, step.get("duration_s"), ops, index, durations_s[s], fail)
        if "comm_s" in step:
            has_comm = True
            _fill_comm(s, step["comm_s"], ops, index, comm_s[s], fail)
    return durations_s, (comm_s if has_comm else None)


def _fill_durations(s, table, ops, index, row, fail: _Failer) -> None:
    if not isinstance(table, dict):
        fail.top(f"step {s} duration_s must be an object keyed by op id (got {_tname(table)})")
    for op_id, value in table.items():
        if op_id not in index:
            fail.op(op_id, f"step {s} duration_s given for an unknown op")
        if ops[index[op_id]].kind == COMM:
            fail.op(op_id, f"step {s} duration_s given for a comm op (comm time comes from "
                           f"size_bytes and bandwidth; recorded timings go in comm_s)")
        problem = _number_problem(value, MAX_DURATION_S)
        if problem:
            fail.op(op_id, f"step {s} duration_s {problem}")
        row[index[op_id]] = value
    for op in ops:
        if op.kind != COMM and op.id not in table:
            fail.op(op.id, f"step {s} duration_s is missing")


def _fill_comm(s, table, ops, index, row, fail: _Failer) -> None:
    if not isinstance(table, dict):
        fail.top(f"step {s} comm_s must be an object keyed by op id (got {_tname(table)})")
    for op_id, value in table.items():
        if op_id not in index:
            fail.op(op_id, f"step {s} comm_s given for an unknown op")
        if ops[index[op_id]].kind != COMM:
            fail.op(op_id, f"step {s} comm_s given for a compute op (use duration_s)")
        if value is None:  # null: not recorded in this step
            continue
        problem = _number_problem(value, MAX_DURATION_S)
        if problem:
            fail.op(op_id, f"step {s} comm_s {problem}")
        row[index[op_id]] = value
