"""float16's gradient unscale (torch.amp's kernel) against the in-place multiply that prices
it in an estimate (ops/graph.py, UNSCALE_FUNC) and the SGD update beside it, on this machine,
one thread: per size, then summed over a zoo model's parameters.

    python docs/validation/ops/unscale/unscale_vs_mul.py [--models zoo:resnet50,zoo:gpt2]
"""
from __future__ import annotations

import statistics
import sys
import time

import torch

SIZES = (1_000, 10_000, 100_000, 1_000_000, 2_359_296, 38_597_376)


def timed_us(fn, n: int) -> float:
    """Median of 7 rounds, each the mean over enough calls for ~20 ms (after 3 untimed)."""
    reps = max(3, int(5e6 // n))
    for _ in range(3):
        fn()
    rounds = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        rounds.append((time.perf_counter() - t) / reps * 1e6)
    return statistics.median(rounds)


def three(n: int) -> tuple[float, float, float]:
    g, p = torch.randn(n), torch.randn(n)
    found, inv = torch.zeros(()), torch.full((), 2.0 ** -16)
    return (timed_us(lambda: torch._amp_foreach_non_finite_check_and_unscale_([g], found, inv), n),
            timed_us(lambda: g.mul_(2.0 ** -16), n),
            timed_us(lambda: p.add_(g, alpha=-1e-3), n))


def main() -> None:
    torch.set_num_threads(1)
    models = sys.argv[sys.argv.index("--models") + 1].split(",") if "--models" in sys.argv else []
    print("| elements | amp unscale (us) | in-place multiply (us) | ratio | SGD add_ (us) |")
    print("|---:|---:|---:|---:|---:|")
    for n in SIZES:
        amp, mul, add = three(n)
        print(f"| {n:,} | {amp:.1f} | {mul:.1f} | {amp / mul:.2f} | {add:.1f} |")
    if models:
        from sgdsim.profiler.spec import load_workload

        print("\n| model | parameters | amp unscale (ms) | in-place multiply (ms) | ratio | SGD add_ (ms) |")
        print("|---|---:|---:|---:|---:|---:|")
        for spec in models:
            with torch.device("meta"):
                shapes = [p.numel() for p in load_workload(spec, 1).model.parameters()]
            sums = [0.0, 0.0, 0.0]
            for n in shapes:
                sums = [a + b for a, b in zip(sums, three(n))]
            amp, mul, add = (x / 1e3 for x in sums)
            print(f"| {spec} | {sum(shapes):,} | {amp:.2f} | {mul:.2f} | {amp / mul:.2f} | {add:.2f} |")
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} thread")


if __name__ == "__main__":
    main()
