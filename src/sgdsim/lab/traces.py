"""Transfers of a traced lab PS run (``run_training(..., trace=True).events``: the PS's events
first, then each worker's), paired step by step on the one machine-wide clock.

A pull runs from the PS's first send to the worker's last received byte, a push from the
worker's first send to the PS's last received byte. Here rather than in ``validate`` because
the lab's own fits (``busy``) read traces too, and the lab must not depend on ``validate``.
"""
from __future__ import annotations


def pulls_pushes(events) -> tuple[list, list]:
    """(pulls, pushes) of a traced PS run as (start, end) pairs, defined as in
    ``validate.regimes.transfer_stats``."""
    steps = list(_steps(events))
    return [pull for _, pull, _ in steps], [push for _, _, push in steps]


def step_transfers(events) -> dict[int, list]:
    """{worker rank: its steps' (pull, push) pairs of (start, end), in the trace's order}."""
    out: dict[int, list] = {}
    for rank, pull, push in _steps(events):
        out.setdefault(rank, []).append((pull, push))
    return out


def ps_steps(events) -> dict:
    """{(worker rank, step): the PS's ``ps_step`` event of that step}."""
    return {(int(e["rank"]), int(e["step"])): e for e in events[0] if e.get("event") == "ps_step"}


def _steps(events):
    """(rank, pull, push) of every traced worker step the PS also traced."""
    ps = ps_steps(events)
    for child in events[1:]:
        for e in child:
            p = ps.get((int(e.get("rank", -1)), int(e.get("step", -1))))
            if e.get("event") == "step" and "down_end" in e and p is not None:
                yield (int(e["rank"]), (min(p["down_start"]), max(e["down_end"])),
                       (min(e["up_start"]), max(p["up_end"])))
