"""GPT-2's forward (seq 64, batch 2, one thread, freed memory kept) under autocast, against the
same model cast to bfloat16 whole and the weights' casts alone: where the autocast step's extra
time sits (docs/ops-runs.md, after run 60). Run on a quiet machine:

    python docs/validation/ops/run60/forward_gap.py
"""
import time, statistics, copy, torch
from sgdsim.profiler.spec import load_workload, call_model
torch.set_num_threads(1)
from sgdsim.profiler.memory import keep_freed_memory; keep_freed_memory()
torch.manual_seed(0)
w = load_workload("zoo:gpt2?seq_len=64", 2)
m = w.model.train()
def fwd_amp():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = call_model(m, w.inputs); loss = w.loss_fn(out, w.target)
    return loss
mb = copy.deepcopy(m).to(torch.bfloat16)
def fwd_bf16():
    out = call_model(mb, w.inputs); return w.loss_fn(out, w.target)
params = [p for p in m.parameters()]
def casts():
    return [p.to(torch.bfloat16) for p in params]
def casts_grad():
    return [p.to(torch.bfloat16) for p in params]
def fwd_f32():
    out = call_model(m, w.inputs); return w.loss_fn(out, w.target)
def t(fn, n=8):
    xs = []
    for _ in range(n + 2):
        t0 = time.perf_counter(); r = fn(); xs.append(time.perf_counter() - t0); del r
    return statistics.median(xs[2:]) * 1e3
for name, fn in (("f32 fwd", fwd_f32), ("amp fwd", fwd_amp), ("bf16-model fwd", fwd_bf16), ("weight casts (grad)", casts)):
    print(name, "%.1f ms" % t(fn))
with torch.no_grad():
    print("weight casts no_grad %.1f ms" % t(casts))
