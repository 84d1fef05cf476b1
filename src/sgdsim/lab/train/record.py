"""``--record-profile``: an sgdsim profile of a real 1-worker, 1-PS lab run (the ICPE way).

Compute ops get the durations measured in the run: ``fwd:L``/``bwd:L`` from the worker's
``LayerTimer``, ``upd:L`` from the PS's in-place SGD step. Comm ops carry the layer's parameter
bytes, and ``comm_s`` the recorded transfer time. Both ends share one clock (CLOCK_MONOTONIC is
machine-wide), so a layer's transfer runs from when its sender started it (or, when layers queue
on the link, from when the previous layer's transfer ended) to when the receiver had its last
byte. Only steps completed after the warm-up are kept.
"""
from __future__ import annotations

from collections import defaultdict

from ...errors import SgdsimError
from ...profile.io import save_profile
from ...profile.model import Job
from .timing import DEVICE, FRAMEWORK, build_profile, chain_ops, compute_durations


def write_profile(cfg, ps_events: list[dict], worker_steps: list[dict]) -> None:
    ps_steps = {e["step"]: e for e in ps_events if e.get("event") == "ps_step"}
    layers = next((e for e in worker_steps if "owners" in e), None)
    paired = [(w, ps_steps[w["step"]]) for w in worker_steps if w["step"] in ps_steps]
    kept = [(w, p) for w, p in paired if w["t"] > cfg.warmup_s] or paired[1:]
    if layers is None or not kept:
        raise SgdsimError("lab run: no step was recorded for --record-profile (run longer: "
                          "--duration well above one step time plus the warm-up)")
    owners, sizes = layers["owners"], layers["tensor_bytes"]
    nbytes: dict[str, float] = defaultdict(float)
    for owner, size in zip(owners, sizes):
        nbytes[owner] += size
    ops = chain_ops(kept[0][0]["order"], dict(nbytes), cfg.overlap)
    steps = [_step(w, p, owners) for w, p in kept]
    times = [w["t"] for w, _ in kept]
    job = Job(model=cfg.label, batch_size=cfg.batch_size, framework=FRAMEWORK,
              device=f"{DEVICE} (lab host)", bandwidth_bps=cfg.bandwidth_bps,
              overlap=cfg.overlap, source="sgdsim lab run --record-profile")
    extra = {"lab_run": {"mode": cfg.mode, "steps_recorded": len(kept),
                         "mean_step_time_s": (times[-1] - times[0]) / (len(times) - 1)
                         if len(times) > 1 else None}}
    save_profile(build_profile(job, ops, steps, extra), cfg.record_profile)


def _step(w: dict, p: dict, owners: list[str]) -> dict:
    upd: dict[str, float] = defaultdict(float)
    for owner, seconds in zip(owners, p["upd"]):
        upd[owner] += seconds
    comm = _transfers("down", owners, p["down_start"], w["down_end"], wire_order=True)
    comm.update(_transfers("up", owners, w["up_start"], p["up_end"], wire_order=False))
    return {"duration_s": compute_durations(w, upd), "comm_s": comm}


def _transfers(prefix: str, owners, starts, ends, wire_order: bool) -> dict[str, float]:
    """Per layer: last byte received minus max(sender start, previous layer's end)."""
    order = range(len(owners)) if wire_order else sorted(range(len(owners)), key=starts.__getitem__)
    groups: dict[str, list[int]] = {}
    for i in order:
        groups.setdefault(owners[i], []).append(i)
    out, prev_end = {}, float("-inf")
    for layer, idx in groups.items():
        start = max(min(starts[i] for i in idx), prev_end)
        end = max(ends[i] for i in idx)
        out[f"{prefix}:{layer}"] = max(0.0, end - start)
        prev_end = end
    return out
