"""Run 58 (docs/ops-runs.md): each operator type's bfloat16 time over its float32 time on the
same calls, from two databases of a model's calls (``ops measure --model ... --dtype``): per
type, the forward and backward times summed over the calls both have (matched by type and
parameters), bfloat16's sum over float32's.

    python docs/validation/ops/run58/bf16_over_f32.py F32_MODELS.sqlite BF16_MODELS.sqlite
"""
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "examples", "ops"))
from prior_cv import load_groups  # noqa: E402
from run_main import run_main  # noqa: E402
from sgdsim.errors import ConfigError  # noqa: E402
from sgdsim.ops.records import params_key  # noqa: E402


def sums(path: str, dtype: str) -> dict:
    """{op: {params key: forward + backward seconds}} of the database's rows in ``dtype``."""
    out: dict = defaultdict(dict)
    for (op, dt), recs in load_groups(path)[1].items():
        if dt == dtype:
            for r in recs:
                out[op][params_key(r.params)] = r.fwd_s + r.bwd_s
    return out


def main() -> None:
    if len(sys.argv) != 3:
        raise ConfigError("usage: python docs/validation/ops/run58/bf16_over_f32.py F32_MODELS.sqlite BF16_MODELS.sqlite")
    f32, bf16 = sums(sys.argv[1], "float32"), sums(sys.argv[2], "bfloat16")
    print("| type | calls in both | float32 (ms) | bfloat16 (ms) | bfloat16 / float32 |\n|---|---:|---:|---:|---:|")
    for op in sorted(set(f32) & set(bf16)):
        keys = set(f32[op]) & set(bf16[op])
        a, b = (sum(d[op][k] for k in keys) for d in (f32, bf16))
        if keys and a > 0:
            print(f"| {op} | {len(keys)} | {a * 1e3:.2f} | {b * 1e3:.2f} | {b / a:.2f} |")


if __name__ == "__main__":
    run_main(main)
