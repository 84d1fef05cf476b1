"""SC'21's weak-scaling table, predicted (issue 37): every row of Table 1 of Narayanan et al.,
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (SC'21,
arXiv:2104.04473), from its model shape and parallel configuration, on the catalogue's A100
80 GB. Twice: with the catalogue's defaults (nothing fitted), and with the GEMM efficiency
calibrated on the smallest row alone (``sgdsim calibrate``'s fit, from that row's step time),
the other nine held out. Writes results.csv and errors.md into docs/validation/llm/.

    python examples/llm/sc21.py
"""
from __future__ import annotations

import csv
import os
import statistics

from dataclasses import replace

from sgdsim.llm import device, parse_gpt, parse_layout, predict_step
from sgdsim.llm.calibrate import fit_gemm_efficiency

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "docs", "validation", "llm")
# Table 1: parameters (B), heads, hidden, layers, tensor-parallel, pipeline-parallel, GPUs,
# batch (sequences), achieved teraFLOP/s per GPU. Sequence 2048, vocabulary 51,200.
ROWS = [(1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
        (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
        (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
        (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
        (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163), (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163)]
# What the table does not state, assumed for every row: one sequence per micro-batch, the
# non-interleaved 1F1B schedule, full activation recomputation (the paper's FLOP count
# includes it), fp16, no ZeRO.
ASSUMED = "mb=1,schedule=1f1b,recompute=full,precision=fp16"


def setup(row):
    billions, heads, hidden, layers, tp, pp, gpus, batch, measured = row
    model = parse_gpt(f"gpt:layers={layers},hidden={hidden},heads={heads},seq=2048,vocab=51200")
    return model, parse_layout(f"tp={tp},pp={pp},batch={batch},{ASSUMED}", gpus)


def predict_rows(dev, label: str) -> list[dict]:
    rows = []
    for row in ROWS:
        billions, *_, gpus, batch, measured = row
        model, layout = setup(row)
        r = predict_step(model, layout, dev)
        predicted = r.achieved_flops_per_gpu / 1e12
        rows.append(dict(calibration=label, params_b=billions, gpus=gpus, tp=layout.tp, pp=layout.pp,
                         dp=layout.dp, batch=batch, measured_tflops=measured,
                         predicted_tflops=round(predicted, 1), error=round(predicted / measured - 1, 4),
                         bubble=round(r.bubble, 4), memory_gib=round(r.memory.total / (1 << 30), 1), fits=r.fits))
    return rows


def table(rows: list[dict], held_out) -> list[str]:
    lines = ["| parameters | GPUs | tp | pp | dp | batch | measured TFLOP/s/GPU | predicted | error | bubble | memory/GPU |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['params_b']} B | {r['gpus']} | {r['tp']} | {r['pp']} | {r['dp']} | {r['batch']} | "
              f"{r['measured_tflops']} | {r['predicted_tflops']} | {r['error']:+.1%} | {r['bubble']:.1%} | "
              f"{r['memory_gib']} GiB |" for r in rows]
    scored = [r for r in rows if held_out(r)]
    return lines + ["", summary([r["error"] for r in scored], [f"{r['params_b']} B" for r in scored])]


def calibrated_on_first_row(dev):
    """(the device with gemm_efficiency fitted to the 1.7 B row's measured step, that step)."""
    first = ROWS[0]
    model, layout = setup(first)
    step = model.step_flops(layout.batch, True) / (first[-1] * 1e12 * layout.gpus)  # its measured step
    return replace(dev, gemm_efficiency=fit_gemm_efficiency(model, layout, dev, step)), step


def summary(errors: list[float], names: list[str]) -> str:
    worst = sorted(zip(errors, names), key=lambda x: -abs(x[0]))[:3]
    return (f"Mean |error| {statistics.mean(abs(e) for e in errors):.1%}, max {max(abs(e) for e in errors):.1%}, "
            f"signed mean {statistics.mean(errors):+.1%} over {len(errors)} rows. Worst: "
            + ", ".join(f"{n} ({e:+.1%})" for e, n in worst) + ".")


def main() -> None:
    dev = device("a100-80gb")
    default = predict_rows(dev, "none")
    first = ROWS[0]
    cal, step = calibrated_on_first_row(dev)
    eff = cal.gemm_efficiency
    calibrated = predict_rows(cal, f"gemm_efficiency {eff:.4f} from the 1.7 B row")
    with open(os.path.join(OUT, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(default[0]))
        w.writeheader()
        w.writerows(default + calibrated)
    lines = ["Defaults (gemm_efficiency 0.8, nothing fitted):", ""] + table(default, lambda r: True)
    lines += ["", f"Calibrated on the 1.7 B row alone (its step time of {step:.3f} s gives gemm_efficiency "
              f"{eff:.4f}); the nine other rows held out, and scored:", ""]
    lines += table(calibrated, lambda r: r["params_b"] != first[0])
    with open(os.path.join(OUT, "errors.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
