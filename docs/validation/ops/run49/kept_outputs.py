"""HF's tanh GELU chain with each call's outputs freed against kept alive, as a step's autograd
keeps them (docs/ops-runs.md, run 49): MALLOC_MMAP_THRESHOLD_=4294967296
MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=1073741824 python kept_outputs.py"""
import math, time, torch, statistics as st
torch.set_num_threads(1)
def new_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
def run(keep, copies=24, reps=5):
    xs = [torch.randn(128, 3072, requires_grad=True) for _ in range(copies)]
    ts = []
    for _ in range(reps):
        kept = []
        t = time.perf_counter()
        for i in range(copies):
            y = new_gelu(xs[i] if keep else xs[0])
            if keep: kept.append(y)
        ts.append((time.perf_counter() - t) / copies)
        del kept
    return st.median(ts) * 1e3
for r in range(3):
    print(f"HF gelu chain on 128x3072, grad kept by autograd: outputs freed each call {run(False):.3f} ms, "
          f"outputs kept (fresh memory, distinct inputs) {run(True):.3f} ms")
