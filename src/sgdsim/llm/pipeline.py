"""A pipeline-parallel step, simulated (issue 37): each device runs its forward and backward
passes of micro-batches in the order its schedule gives; a pass starts when the device is free
and its input has arrived (the previous stage's pass, plus the point-to-point send). The bubble
is what comes out, not an input: with uniform stages and free sends it is (p − 1)/m of the
ideal time for GPipe and 1F1B, (p − 1)/(m·v) for the interleaved 1F1B with v chunks per device
(Narayanan et al., SC'21, §2.2), as ``tests/test_llm_pipeline.py`` checks.

Global stage g = chunk·p + device (Megatron's interleaving); a pass is (kind, micro-batch, g).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

F, B = 0, 1


@dataclass(frozen=True)
class PipelineRun:
    makespan_s: float  # first forward to last backward
    busy_s: tuple[float, ...]  # per device: its passes' time

    def bubble(self) -> float:
        """Idle share of the busiest device's work: makespan / work − 1."""
        return self.makespan_s / max(self.busy_s) - 1.0


def orders(p: int, m: int, schedule: str, v: int = 1) -> list[list[tuple[int, int, int]]]:
    """Per device, its passes in the order the schedule runs them."""
    if schedule == "gpipe":
        return [[(F, i, d) for i in range(m)] + [(B, i, d) for i in range(m)] for d in range(p)]
    if schedule == "1f1b":
        return [_one_f_one_b(p, m, 1, d) for d in range(p)]
    if schedule == "interleaved":
        if m % p:
            raise ConfigError(f"the interleaved schedule needs micro-batches ({m}) to be a multiple of pp={p}")
        return [_one_f_one_b(p, m, v, d) for d in range(p)]
    raise ConfigError(f"unknown pipeline schedule {schedule!r}")


def _one_f_one_b(p: int, m: int, v: int, d: int) -> list[tuple[int, int, int]]:
    """Warm-up forwards, then one forward and one backward in turn, then the last backwards
    (Megatron's ``forward_backward_pipelining_*``; with v > 1 its interleaved order)."""
    total = m * v
    if v == 1:
        warm = min(p - d - 1, m)
    else:
        warm = total if m == p else min((p - d - 1) * 2 + (v - 1) * p, total)

    def pass_of(kind: int, k: int) -> tuple[int, int, int]:
        chunk = (k % (p * v)) // p
        if kind == B:
            chunk = v - 1 - chunk
        return kind, (k // (p * v)) * p + k % p, chunk * p + d

    out = [pass_of(F, k) for k in range(warm)]
    for k in range(total - warm):
        out += [pass_of(F, warm + k), pass_of(B, k)]
    return out + [pass_of(B, k) for k in range(total - warm, total)]


def simulate(p: int, m: int, schedule: str, fwd_s, bwd_s, send_s: float = 0.0, v: int = 1) -> PipelineRun:
    """``fwd_s[g]``, ``bwd_s[g]``: one micro-batch's pass through global stage g (p·v of them);
    ``send_s``: a point-to-point send of activations (or their gradients) between stages."""
    G = p * v
    if len(fwd_s) != G or len(bwd_s) != G:
        raise ConfigError(f"a pipeline of {p} devices × {v} chunks has {G} stages, got "
                          f"{len(fwd_s)} forward and {len(bwd_s)} backward times")
    seq = orders(p, m, schedule, v)
    done: dict[tuple[int, int, int], float] = {}
    free, nxt, busy = [0.0] * p, [0] * p, [0.0] * p
    left = sum(len(s) for s in seq)
    while left:
        moved = False
        for d in range(p):
            while nxt[d] < len(seq[d]):
                kind, i, g = seq[d][nxt[d]]
                ready = _ready(done, kind, i, g, G, send_s)
                if ready is None:
                    break
                dur = fwd_s[g] if kind == F else bwd_s[g]
                start = max(free[d], ready)
                free[d] = done[(kind, i, g)] = start + dur
                busy[d] += dur
                nxt[d] += 1
                left -= 1
                moved = True
        if not moved:
            raise ConfigError(f"the {schedule} schedule deadlocked (p={p}, m={m}, v={v})")
    return PipelineRun(max(free), tuple(busy))


def _ready(done, kind: int, i: int, g: int, G: int, send_s: float) -> float | None:
    """When pass (kind, i, g)'s input is there; None if it is not produced yet."""
    if kind == F:
        if g == 0:
            return 0.0
        t = done.get((F, i, g - 1))
        return None if t is None else t + send_s
    if g == G - 1:
        return done.get((F, i, g))
    t = done.get((B, i, g + 1))
    return None if t is None else t + send_s
