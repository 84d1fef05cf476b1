"""Run 45 (docs/ops-runs.md): per (run, type) the models' calls' sum estimated / measured
from two files of `model_calls.py` tables, each run's under a "## runNN" line; prints the mean
|ln ratio| over the pairs with at least two calls, per run, and each type's ratios.

    python ratios.py THIS.txt PARENT.txt run34,run38,run39,run40
"""
import sys, math, re
def parse(path):
    out, run = {}, None
    for line in open(path):
        if line.startswith("## "): run = line[3:].strip(); continue
        m = re.match(r"\| (\w+) \| (\d+) \|.*\| ([\d.]+) \|$", line.strip())
        if m and run: out[(run, m.group(1))] = (int(m.group(2)), float(m.group(3)))
    return out
a, b = parse(sys.argv[1]), parse(sys.argv[2])
runs = sys.argv[3].split(",")
keys = sorted(k for k in a if k in b and k[0] in runs and a[k][0] >= 2)
la = [abs(math.log(a[k][1])) for k in keys]; lb = [abs(math.log(b[k][1])) for k in keys]
print(f"{len(keys)} (run, type) pairs; mean |ln ratio| parent {sum(lb)/len(lb):.4f} -> this {sum(la)/len(la):.4f}")
for r in runs:
    ks = [k for k in keys if k[0] == r]
    print(r, f"{sum(abs(math.log(b[k][1])) for k in ks)/len(ks):.4f} -> {sum(abs(math.log(a[k][1])) for k in ks)/len(ks):.4f}")
print("| type | " + " | ".join(runs) + " |")
for t in sorted({k[1] for k in keys}):
    print(f"| {t} | " + " | ".join(f"{b[(r,t)][1]:.2f} → {a[(r,t)][1]:.2f}" if (r,t) in keys else "-" for r in runs) + " |")
