"""A TCP flow that joins a busy link: the late-comer's advantage, fitted from two-pull rounds.

Measured with ``examples/lab/joiner.py`` (docs/validation/regimes/, finding 5): two hosts pull
the same number of bytes from a third, the second starting δ after the first. Equal sharing
ends the second δ after the first. On the lab's token buckets the late pull gets more than
half of the link once the first has run past its start-up (the incumbent has met its first
losses and backed off; the joiner is still probing), so the two end closer than δ and async
workers drift into lock-step.

The model (``sim/sharing/fair.py``): a flow that joins while the youngest flow on the link
has run at least ``after_s`` gets weight ``boost``, the others 1, until the next arrival. For
two pulls of one lone-transfer time T each, it gives the ends in closed form
(``two_flow_ends``); ``fit_join`` picks the (boost, after_s) whose ends best match the rounds'
measured end_B − end_A in the least-squares sense.

``sgdsim netbench --lab --joiner`` measures the rounds for pulls ("down": lab host 0 sends to
hosts 1 and 2) and pushes ("up": they send to it), with host 0 timing both transfers and
starting the second at fractions of T (the peers are ``lab.fairness``'s), and writes both fits
to the hardware file. Roles: ``python -m sgdsim.lab.joiner hub --size N ...``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import socket
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .fairness import IO_TIMEOUT_S, payload_of, peer_argv, transfers
from .procs import hub_and_peers

FRACTIONS = (0.0, 0.06, 0.12, 0.25, 0.5, 0.7)  # offsets as fractions of one lone transfer
LONE = 3  # lone transfers per peer and direction, for T
_READY = "joiner hub listening on"

BOOSTS = np.round(np.arange(1.0, 4.0001, 0.01), 2)  # the grid fit_join searches


@dataclass(frozen=True)
class JoinFit:
    boost: float  # the joiner's weight against 1 for the incumbent
    after_s: float  # the incumbent's age from which it applies
    rms_gap_s: float  # root mean square of the fit's end_B − end_A error over the rounds
    equal_rms_gap_s: float  # the same for equal sharing (boost 1)


def two_flow_ends(lone_s: float, delta_s: float, boost: float) -> tuple[float, float]:
    """Ends of pull A (starts at 0) and pull B (starts at δ), each T = ``lone_s`` alone, when
    B gets ``boost`` times A's weight while both run (work-conserving)."""
    if delta_s >= lone_s:
        return lone_s, delta_s + lone_s
    phi = boost / (1.0 + boost)  # B's share of the link while both run
    left_a = lone_s - delta_s
    t_a, t_b = left_a / (1.0 - phi), lone_s / phi
    if t_a <= t_b:  # A ends first; B finishes its remainder alone
        return delta_s + t_a, delta_s + t_a + lone_s - phi * t_a
    return delta_s + t_b + left_a - (1.0 - phi) * t_b, delta_s + t_b


def fit_join(rounds: list[tuple[float, float]], lone_s: float) -> JoinFit:
    """(boost, after_s) from rounds of (δ, measured end_B − end_A), both in seconds.

    ``after_s`` is searched at 0 and halfway between consecutive measured offsets (the rounds
    cannot place it closer than that), ``boost`` on a 0.01 grid from 1 to 4.
    """
    if not rounds or not lone_s > 0:
        raise ConfigError("fit_join needs at least one round and a positive lone transfer time")
    deltas = np.array([d for d, _ in rounds], float)
    gaps = np.array([g for _, g in rounds], float)
    offsets = np.unique(deltas)
    candidates = [0.0] + [float(a + b) / 2 for a, b in zip(offsets[:-1], offsets[1:])]
    model = {k: np.array([np.subtract(*two_flow_ends(lone_s, d, k)[::-1]) for d in offsets])
             for k in BOOSTS}
    index = np.searchsorted(offsets, deltas)
    best = None
    for after_s in candidates:
        boosted = deltas >= after_s
        for k in BOOSTS:
            predicted = np.where(boosted, model[k][index], model[1.0][index])
            err = float(np.sqrt(np.mean((predicted - gaps) ** 2)))
            if best is None or err < best[0] - 1e-12:
                best = (err, float(k), after_s)
    equal = float(np.sqrt(np.mean((model[1.0][index] - gaps) ** 2)))
    return JoinFit(boost=best[1], after_s=best[2], rms_gap_s=best[0], equal_rms_gap_s=equal)


def pooled(sets: list[tuple[list[tuple[float, float]], float]]) -> tuple[list[tuple[float, float]], float]:
    """Rounds of several measurements (each its rounds and lone time) as one set: every offset
    and gap rescaled to the mean lone time, since the mechanism scales with it to first order."""
    t_mean = float(np.mean([t for _, t in sets]))
    return [(d * t_mean / t, g * t_mean / t) for rounds, t in sets for d, g in rounds], t_mean


# ----------------------------------------------------------------------------- the hub

def hub(size: int, repeats: int, idle_s: float, port: int = 0, announce=print) -> dict:
    """Two peers connect; per direction: T from lone transfers, then ``repeats`` rounds at
    every offset in FRACTIONS · T (interleaved, so drift hits every offset alike)."""
    srv = socket.create_server(("0.0.0.0", port))
    srv.settimeout(IO_TIMEOUT_S)
    announce(f"{_READY} {srv.getsockname()[1]}", flush=True)
    with srv:
        conns = [srv.accept()[0] for _ in range(2)]
    for c in conns:
        c.settimeout(IO_TIMEOUT_S)
    payload = payload_of(size)
    out = {}
    try:
        for direction in ("down", "up"):
            lone = []
            for _ in range(LONE):
                for c in conns:
                    lone.append(transfers([c], [0.0], direction, size, payload)[0][1])
                    time.sleep(idle_s)
            t_lone = statistics.median(lone)
            rounds = []
            for _ in range(repeats):
                for frac in FRACTIONS:
                    (sa, ea), (sb, eb) = transfers(conns, [0.0, frac * t_lone], direction, size, payload)
                    rounds.append([frac * t_lone, eb - ea, sb - sa])
                    time.sleep(idle_s)
            out[direction] = {"lone_s": t_lone, "rounds": rounds}
    finally:
        for c in conns:
            c.close()
    return out


# ----------------------------------------------------------------------------- in the lab

def run_lab(size: int, repeats: int = 6, idle_s: float = 1.0, lab=None) -> dict:
    """Hub on lab host 0, peers on hosts 1 and 2: the rounds and both directions' fits."""
    from .cluster import LabCluster

    lab = lab or LabCluster.attach()
    if lab.hosts < 3:
        raise ConfigError(f"--joiner needs a lab of at least 3 hosts, this one has {lab.hosts}")
    out = hub_and_peers(lab, [sys.executable, "-m", "sgdsim.lab.joiner", "hub", "--size", str(size),
                              "--repeats", str(repeats), "--idle", repr(idle_s)], _READY, "joiner",
                        lambda port: peer_argv(lab, port, size), 2,
                        (repeats * len(FRACTIONS) + 2 * LONE) * 2 * (idle_s + 60))
    return summarize(json.loads(out))


def summarize(measured: dict) -> dict:
    """Both directions' fits (``fit_join`` on the nominal offsets) beside the raw rounds."""
    fits = {d: fit_join([(r[0], r[1]) for r in m["rounds"]], m["lone_s"]) for d, m in measured.items()}
    return {"fits": {d: dataclasses.asdict(f) for d, f in fits.items()}, "rounds": measured}


def with_joiner(hw, size: int, repeats: int, say):
    """``hw`` with the lab's measured join boosts (pulls: down, pushes: up)."""
    from ..progress import status

    say(f"joiner: two transfers of {size} bytes, the second late by 0-70 % of one, "
        f"{repeats} rounds per offset each way ...")
    with status("joiner: measuring (about 4 minutes for 10 MB at 100 Mbit/s)"):
        got = run_lab(size, repeats)
    down, up = got["fits"]["down"], got["fits"]["up"]
    return dataclasses.replace(hw, join_boost=down["boost"], join_after_s=down["after_s"],
                               join_boost_push=up["boost"], join_after_push_s=up["after_s"],
                               measured={**hw.measured, "joiner_size_bytes": size, "joiner": got})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.joiner")
    sub = ap.add_subparsers(dest="role", required=True)
    h = sub.add_parser("hub")
    h.add_argument("--size", type=int, required=True)
    h.add_argument("--repeats", type=int, default=6)
    h.add_argument("--idle", type=float, default=1.0)
    h.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        print(json.dumps(hub(args.size, args.repeats, args.idle, args.port)))
        return 0
    except OSError as exc:
        print(f"sgdsim: error: joiner hub: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
