"""Published runs held out from everything sgdsim's large-model defaults were chosen on
(issue 37): the end-to-end iteration times of Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models" (MLSys 2023, arXiv:2205.05198), Table 5: GPT
models of 22 B to 1 T parameters on 8 to 512 A100 80 GB GPUs, each with full recomputation
and with the paper's selective recomputation plus sequence parallelism. The configurations are
the paper's Table 3 (as Calculon's validation suite encodes them: tensor- and
pipeline-parallel sizes, batch, micro-batch, interleaving). Predicted twice: with the
catalogue's defaults, and with the GEMM efficiency fitted to SC'21's 1.7 B row (the one
calibration ``sc21.py`` states), nothing fitted to these rows. Writes
korthikanti.csv and korthikanti.md into docs/validation/llm/.

    python examples/llm/korthikanti.py
"""
from __future__ import annotations

import csv
import os

from sc21 import OUT, calibrated_on_first_row, summary

from sgdsim.llm import device, parse_gpt, parse_layout, predict_step

# name, layers, hidden, heads, tp, pp, GPUs, batch, micro-batch, v (model chunks per device),
# seconds per iteration with full recomputation, with selective recomputation + sequence parallelism
ROWS = [("22B", 48, 6144, 64, 8, 1, 8, 4, 4, 1, 1.42, 1.10),
        ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 18.13, 13.75),
        ("530B", 105, 20480, 128, 8, 35, 280, 280, 1, 3, 49.05, 37.83),
        ("1T", 128, 25600, 160, 8, 64, 512, 512, 1, 1, 94.42, 71.49)]
MODES = (("full", "recompute=full"), ("selective + SP", "recompute=selective,sp=1"))


def predict_rows(dev, label: str) -> list[dict]:
    rows = []
    for name, layers, hidden, heads, tp, pp, gpus, batch, mb, v, *measured in ROWS:
        model = parse_gpt(f"gpt:layers={layers},hidden={hidden},heads={heads},seq=2048,vocab=51200")
        schedule = "interleaved" if v > 1 else "1f1b"
        for (mode, fields), step in zip(MODES, measured):
            layout = parse_layout(f"tp={tp},pp={pp},batch={batch},mb={mb},schedule={schedule},v={v},"
                                  f"{fields},precision=fp16", gpus)
            r = predict_step(model, layout, dev)
            rows.append(dict(calibration=label, model=name, mode=mode, gpus=gpus,
                             layout=layout.describe(batch=True), measured_s=step,
                             predicted_s=round(r.step_s, 3), error=round(step / r.step_s - 1, 4),
                             memory_gib=round(r.memory.total / (1 << 30), 1), fits=r.fits))
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = ["| model | GPUs | layout | measured s/step | predicted | error | memory/GPU |",
             "|---|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {r['model']} | {r['gpus']} | {r['layout']} | {r['measured_s']} | "
              f"{r['predicted_s']} | {r['error']:+.1%} | {r['memory_gib']} GiB |" for r in rows]
    return lines + ["", summary([r["error"] for r in rows], [f"{r['model']} {r['mode']}" for r in rows])]


def main() -> None:
    dev = device("a100-80gb")
    cal, _ = calibrated_on_first_row(dev)
    default = predict_rows(dev, "none")
    calibrated = predict_rows(cal, f"gemm_efficiency {cal.gemm_efficiency:.4f} from SC'21's 1.7 B row")
    with open(os.path.join(OUT, "korthikanti.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(default[0]))
        w.writeheader()
        w.writerows(default + calibrated)
    lines = ["Defaults (gemm_efficiency 0.8, nothing fitted):", ""] + table(default)
    lines += ["", f"With SC'21's calibration (gemm_efficiency {cal.gemm_efficiency:.4f}, fitted to its "
              "1.7 B row; nothing fitted to these rows):", ""] + table(calibrated)
    with open(os.path.join(OUT, "korthikanti.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
