"""How steady is this machine? The same two operators, timed again every 1.5 s for a minute.

Each point is the median of 50 naive timings of a fixed call (a 256x256x256 matmul, a relu of
1 M floats; one torch thread). On a dedicated machine the points agree within a few percent;
where they do not, no operator timer can be more repeatable than they are, and an estimator's
error on held-out shapes is bounded below by it (docs/ops.md, "What limits the accuracy").

    python examples/ops/drift.py --markdown docs/validation/ops/drift.md
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

CALLS = {"mm 256x256x256": lambda t: torch.mm(t["a"], t["b"]),
         "relu 1M floats": lambda t: torch.relu(t["x"])}


def probe(points: int, pause_s: float, reps: int = 50) -> dict[str, np.ndarray]:
    g = torch.Generator().manual_seed(0)
    tensors = {"a": torch.randn(256, 256, generator=g), "b": torch.randn(256, 256, generator=g),
               "x": torch.randn(1_000_000, generator=g)}
    out: dict[str, list[float]] = {name: [] for name in CALLS}
    for _ in range(points):
        for name, fn in CALLS.items():
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn(tensors)
                ts.append(time.perf_counter() - t0)
            out[name].append(float(np.median(ts)))
        time.sleep(pause_s)
    return {k: np.array(v) for k, v in out.items()}


def render(result: dict[str, np.ndarray], pause_s: float) -> str:
    lines = ["| call | points | min µs | median µs | max µs | max / min | mean abs. deviation |",
             "|---|---|---|---|---|---|---|"]
    for name, v in result.items():
        us = v * 1e6
        mad = float(np.mean(np.abs(v / np.median(v) - 1)))
        lines.append(f"| {name} | {len(v)} | {us.min():.1f} | {np.median(us):.1f} | "
                     f"{us.max():.1f} | {us.max() / us.min():.2f} | {mad:.1%} |")
    lines += ["", f"Each point: median of 50 timings; points {pause_s} s apart; one torch thread."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--pause", type=float, default=1.5)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    text = render(probe(args.points, args.pause), args.pause)
    print(text)
    if args.markdown:
        with open(args.markdown, "x", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
