"""The optimizer's in-place update and one GELU call on one tensor against 32 in turn
(docs/ops-runs.md, run 49): python cold_updates.py"""
import time, torch, statistics as st
torch.set_num_threads(1)
def timed(fn, copies, reps=5):
    ts=[]
    for _ in range(reps):
        t=time.perf_counter()
        for i in range(copies): fn(i)
        ts.append((time.perf_counter()-t)/copies)
    return st.median(ts)*1e3
for numel in [768*3072, 768*768, 50257*768//8]:
    for copies in (1, 32):
        ps=[torch.randn(numel) for _ in range(copies)]; gs=[torch.randn(numel) for _ in range(copies)]
        upd=timed(lambda i: ps[i].add_(gs[i], alpha=-1e-3), copies)
        x=[torch.randn(numel) for _ in range(copies)]
        gelu=timed(lambda i: torch.nn.functional.gelu(x[i]), copies)
        print(f"numel {numel:>9,} ({numel*4/2**20:.1f} MiB) tensors in turn {copies:2d}: update {upd:.3f} ms, gelu {gelu:.3f} ms")
