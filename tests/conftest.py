"""Shared builders for the simulator tests: tiny hand-made DAG profiles and a simulate wrapper.

The test modules import these helpers with ``from conftest import ...`` (pytest puts ``tests/``
on ``sys.path`` in its default import mode).

Units everywhere: bytes, seconds; ``Bps`` means bytes/s (``simcfg`` takes bits/s, = 8·Bps).
"""
from __future__ import annotations

import json
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from sgdsim.profile.io import load_profile, validate_profile
from sgdsim.profile.model import Job, Op, Profile
from sgdsim.sim import WorkerClass, simulate
from simcfg import simcfg

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "profiles"
# a validation grid's defaults for tests that replace the lab: a small lab model, short runs
LAB_DEFAULTS = """[defaults]
model = "lab:mlp-20mb"
batch_size = 16
bandwidth = "100Mbps"
duration = "3s"
warmup = "1s"
"""

Chunk = namedtuple("Chunk", "worker resource op start end step")


@pytest.fixture(autouse=True)
def _notices_on():
    """Each test starts as a fresh process does: a ``--quiet`` is one command's (``progress``
    keeps it in a module global), not the rest of the session's."""
    from sgdsim import progress

    progress.configure(False)


# ----------------------------------------------------------------------------- profiles

def comm(op_id: str, resource: str, size: float, deps=(), layer: str = "", ps: int = 0) -> Op:
    return Op(id=op_id, name=op_id, layer=layer, kind="comm", resource=resource,
              deps=tuple(deps), ps=ps, size_bytes=float(size))


def compute(op_id: str, deps=(), layer: str = "", resource: str = "worker", ps: int = 0) -> Op:
    return Op(id=op_id, name=op_id, layer=layer, kind="compute", resource=resource,
              deps=tuple(deps), ps=ps)


def build_profile(ops, durations, batch: int = 32, model: str = "toy") -> Profile:
    """``durations``: {compute op id: seconds} for one step, or a list of such dicts (S steps)."""
    ops = tuple(ops)
    steps = [durations] if isinstance(durations, dict) else list(durations)
    arr = np.zeros((len(steps), len(ops)))
    for s, d in enumerate(steps):
        for i, op in enumerate(ops):
            if op.kind == "compute":
                arr[s, i] = float(d.get(op.id, 0.0))
    prof = Profile(job=Job(model=model, batch_size=batch), ops=ops, durations_s=arr)
    return validate_profile(prof, model)


def layered_profile(sizes, fwd, bwd, *, overlap: bool, upd=None, batch: int = 32,
                    ps=None, model: str = "layered") -> Profile:
    """A PipeDream-shaped chain of ``n`` layers (``docs/profile-format.md``).

    ``sizes[i]``: parameter bytes of layer i (0: no down/up/upd ops). ``fwd``/``bwd``/``upd``:
    per-layer seconds, either length n (one step) or shape (S, n) (S profiled steps).
    ``overlap=False``: the root forward waits for every downlink and every uplink waits for the
    terminal backward (``bwd:L0``). ``ps[i]``: parameter server of layer i.
    """
    n = len(sizes)
    fwd = np.atleast_2d(np.asarray(fwd, float))
    bwd = np.atleast_2d(np.asarray(bwd, float))
    upd = np.zeros_like(fwd) if upd is None else np.atleast_2d(np.asarray(upd, float))
    ps = [0] * n if ps is None else list(ps)
    names = [f"L{i}" for i in range(n)]
    params = [i for i in range(n) if sizes[i] > 0]
    rank = {p: k for k, p in enumerate(sorted({ps[i] for i in params}))}  # servers 0..K-1:
    ps = [rank.get(p, 0) for p in ps]  # a server left with no parameters is not a server
    ops = [comm(f"down:{names[i]}", "downlink", sizes[i], layer=names[i], ps=ps[i]) for i in params]
    for i in range(n):
        deps = [f"fwd:{names[i - 1]}"] if i else []
        if overlap and sizes[i] > 0:
            deps.append(f"down:{names[i]}")
        if not overlap and i == 0:
            deps += [f"down:{names[j]}" for j in params]
        ops.append(compute(f"fwd:{names[i]}", deps, layer=names[i]))
    for i in reversed(range(n)):
        deps = [f"fwd:{names[i]}"] if i == n - 1 else [f"bwd:{names[i + 1]}"]
        ops.append(compute(f"bwd:{names[i]}", deps, layer=names[i]))
    for i in reversed(params):
        dep = f"bwd:{names[i]}" if overlap else f"bwd:{names[0]}"
        ops.append(comm(f"up:{names[i]}", "uplink", sizes[i], [dep], layer=names[i], ps=ps[i]))
    for i in reversed(params):
        ops.append(compute(f"upd:{names[i]}", [f"up:{names[i]}"], layer=names[i],
                           resource="ps", ps=ps[i]))
    steps = []
    for s in range(max(len(fwd), len(bwd), len(upd))):
        d = {}
        for i in range(n):
            d[f"fwd:{names[i]}"] = fwd[s % len(fwd), i]
            d[f"bwd:{names[i]}"] = bwd[s % len(bwd), i]
            d[f"upd:{names[i]}"] = upd[s % len(upd), i]
        steps.append(d)
    return build_profile(ops, steps, batch=batch, model=model)


_EXAMPLE_CACHE: dict[str, Profile] = {}


def example(name: str) -> Profile:
    if name not in _EXAMPLE_CACHE:
        _EXAMPLE_CACHE[name] = load_profile(EXAMPLES / f"{name}.json")
    return _EXAMPLE_CACHE[name]


# ----------------------------------------------------------------------------- simulation

def run_sim(profile, *, workers: int = 1, Bps: float = 1e6, steps: int = 1, warmup: int = 0,
            timeline: bool = True, classes=None, **config):
    """Simulate ``workers`` copies of ``profile`` (or explicit ``classes``) at ``Bps`` bytes/s."""
    if "flow_cap_Bps" in config:
        config["flow_cap_bps"] = 8.0 * config.pop("flow_cap_Bps")
    cfg = simcfg(bandwidth_bps=8.0 * Bps, warmup_steps=warmup, steps_per_worker=steps,
                    timeline=timeline, **config)
    if classes is None:
        classes = [WorkerClass("default", profile, workers)]
    return simulate(classes, cfg)


def chunks(result) -> list[Chunk]:
    """The executed chunks as (worker, resource name, op id, start, end, step), by start time."""
    tl = result.timeline
    out = [Chunk(int(w), tl.resource_names[int(r)], tl.op_ids[int(o)], float(t0), float(t1), int(s))
           for w, r, o, t0, t1, s in zip(tl.worker, tl.resource, tl.op, tl.start_s, tl.end_s, tl.step)]
    return sorted(out, key=lambda c: (c.start, c.end, c.worker, c.op))


def op_chunks(result, op_id: str, worker: int = 0, step: int | None = None) -> list[tuple[float, float]]:
    """(start, end) of every chunk of ``op_id`` run by ``worker`` (in ``step`` if given)."""
    return [(c.start, c.end) for c in chunks(result)
            if c.op == op_id and c.worker == worker and (step is None or c.step == step)]


def cli_predictions(capsys, workers: int, *extras) -> list:
    """``sgdsim predict`` of the bundled AlexNet at 1 Gbps (one short replication, JSON) once
    per list of extra options: what each run printed."""
    from sgdsim.cli import main

    args = ["predict", "examples/profiles/alexnet.json", "--workers", str(workers), "--bandwidth",
            "1Gbps", "--replications", "1", "--steps", "10", "--quiet", "--format", "json"]
    out = []
    for extra in extras:
        assert main(args + list(extra)) == 0
        out.append(json.loads(capsys.readouterr().out))
    return out


def approx(x, rel: float = 1e-9):
    """Tight comparison for event times and rates computed by hand."""
    return pytest.approx(x, rel=rel, abs=1e-12)
