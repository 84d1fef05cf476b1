"""A linear layer timed on one weight against 48 in turn (each read cold), GPT-2's and a
batch-2 head's shapes (docs/ops-runs.md, run 49): python cold_weights.py"""
import time, torch, statistics as st
torch.set_num_threads(1)
def run(m,k,n, copies):
    x = torch.randn(m, k)
    Ws = [torch.randn(n, k) for _ in range(copies)]
    bs = [torch.randn(n) for _ in range(copies)]
    for i in range(copies): torch.nn.functional.linear(x, Ws[i], bs[i])
    ts=[]
    for rep in range(5):
        t=time.perf_counter()
        for i in range(copies): torch.nn.functional.linear(x, Ws[i], bs[i])
        ts.append((time.perf_counter()-t)/copies)
    return st.median(ts)*1e3
for (m,k,n) in [(128,768,3072),(128,3072,768),(2,2048,1000),(128,768,768)]:
    for r in range(2):
        warm = run(m,k,n,1); cold = run(m,k,n,48)
        print(f"linear m={m} k={k} n={n}: same weight {warm:.3f} ms, 48 weights in turn {cold:.3f} ms, {cold/warm:.2f}x")
