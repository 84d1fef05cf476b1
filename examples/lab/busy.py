"""Busy shares of a PS's NIC in training traffic, from traced async PS runs (docs/validation/
regimes/, finding 7; ``sgdsim.lab.busy``).

    sudo .venv/bin/python examples/lab/async_regimes.py -o traced.json --workers 4,8 \\
        --overlap no --repeats 2 --duration 90 --trace        # ~9 min; add --bandwidth 200Mbps
    .venv/bin/python examples/lab/busy.py traced.json HARDWARE.json            # the fits
    .venv/bin/python examples/lab/busy.py traced.json HARDWARE.json --record   # into the file

The table of ``netbench --lab --two-way`` must already be in HARDWARE.json: the fit is what
training traffic delivers beyond it. Each run's model (``lab:...``) gives the bytes of its
transfers; it needs torch. Several traced files (comma-separated) are pooled; ``--flows 3,4``
fits one share for 3 transfers on the NIC and one from 4 on (runs of 3 workers and of 4 or
more tell them apart; finding 16):

    .venv/bin/python examples/lab/busy.py A.json,B.json,C.json HARDWARE.json --flows 3,4 --record

``--shape S`` (0 to 1) also fits the shares as c times the table's entry to the power S, which
the simulator uses, and records them with S (``two_way_busy_shaped``, ``two_way_busy_shape``;
the flat shares stay for the coarse model). ``examples/lab/split_occupancy.py --fit-shape``
chooses S from how the traced runs split their transfers between the NIC's two directions.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from sgdsim.errors import SgdsimError
from sgdsim.hardware import load_hardware, save_hardware
from sgdsim.lab.busy import busy_shares, check_flows
from sgdsim.spec.two_way import check_shape


def model_bytes(spec: str, batch_size: int) -> int:
    """The bytes the lab's PS sends a worker each step (its parameters, layer by layer)."""
    from sgdsim.lab.train.models import load_workload
    from sgdsim.lab.train.timing import layer_bytes

    return int(sum(layer_bytes(load_workload(spec, batch_size).model).values()))


def traced_runs(paths: str) -> list[dict]:
    runs = []
    for path in paths.split(","):
        try:
            with open(path, encoding="utf-8") as f:
                runs += [r for r in json.load(f)["runs"] if r.get("events")]
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise SgdsimError(f"{path} is not an async_regimes.py file ({type(exc).__name__}: {exc})") from None
    if not runs:
        raise SgdsimError(f"{paths} holds no traced runs (measure them with --trace)")
    return runs


def _flows(text: str) -> tuple[int, ...]:
    try:
        flows = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SgdsimError(f"--flows: expected flow counts such as 3,4, got {text!r}") from None
    check_flows(flows)
    return flows


def _shares(c) -> str:
    return "/".join(f"{v:.3f}" for v in (c if isinstance(c, tuple) else (c,)))


def _rounded(c):
    return tuple(round(v, 3) for v in c) if isinstance(c, tuple) else round(c, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traced", help="async_regimes.py --trace output (several: comma-separated)")
    ap.add_argument("hardware", help="hardware file with the two-way table")
    ap.add_argument("--flows", default="3", help="flow counts each share starts at (default 3: one share)")
    ap.add_argument("--shape", type=float, default=0.0,
                    help="the table's shape in the shares, an exponent in [0, 1] (default 0: flat)")
    ap.add_argument("--record", action="store_true", help="write the pooled fit into the file")
    args = ap.parse_args()
    try:
        flows = _flows(args.flows)
        shape = check_shape(args.shape, "--shape")
        runs = traced_runs(args.traced)
        hw = load_hardware(args.hardware)
        if hw.two_way_table is None:
            raise SgdsimError(f"{args.hardware} has no two_way_table (netbench --lab --two-way)")
        sizes = [model_bytes(r["model"], int(r["batch_size"])) for r in runs]
        for r, size in zip(runs, sizes):
            c = busy_shares([r["events"]], size, hw.bandwidth_bps, hw.two_way_table)
            print(f"W = {r['workers']}, run {r['repeat']}: pulls {c[0]:.3f}, pushes {c[1]:.3f}")
        events = [r["events"] for r in runs]
        c = busy_shares(events, sizes, hw.bandwidth_bps, hw.two_way_table, flows)
        shaped = busy_shares(events, sizes, hw.bandwidth_bps, hw.two_way_table, flows, shape) if shape else None
    except (OSError, KeyError, TypeError, ValueError, SgdsimError) as exc:
        print(f"busy.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
    by = "" if len(flows) == 1 else f" by flow count from {'/'.join(map(str, flows))}"
    print(f"pooled ({len(runs)} runs, {'/'.join(str(s) for s in sorted(set(sizes)))} bytes a transfer){by}: "
          f"pulls {_shares(c[0])}, pushes {_shares(c[1])}")
    if shaped:
        print(f"with the table's shape to the power {shape:g}: pulls {_shares(shaped[0])}, pushes {_shares(shaped[1])}")
    if args.record:
        hw = dataclasses.replace(hw, two_way_busy=_rounded(c[0]), two_way_busy_push=_rounded(c[1]),
                                 two_way_busy_shape=shape or None,
                                 two_way_busy_shaped=_rounded(shaped[0]) if shaped else None,
                                 two_way_busy_shaped_push=_rounded(shaped[1]) if shaped else None,
                                 measured={**hw.measured, "busy": {
                                     "traced": args.traced, "flows": list(flows),
                                     "model_bytes": sorted(set(sizes)),
                                     "runs": [[r["workers"], r["repeat"]] for r in runs]}})
        save_hardware(hw, args.hardware, force=True)
        more = ", two_way_busy_shaped(_push) and two_way_busy_shape" if shape else ""
        print(f"wrote two_way_busy, two_way_busy_push{more} to {args.hardware}")


if __name__ == "__main__":
    main()
