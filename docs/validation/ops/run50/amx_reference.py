"""The bfloat16 mm reference timed idle, after 1 s of 1,024-square bfloat16 or float32
products, and after a pause (docs/ops-runs.md, run 50): python amx_reference.py"""
import time, torch, statistics as st
torch.set_num_threads(1)
def ref(dt):
    a = torch.randn(48, 512).to(dt); b = torch.randn(512, 464).to(dt)
    for _ in range(3): a @ b
    ts = []
    for _ in range(50):
        t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
    return st.median(ts) * 1e6
def heavy(dt, secs):
    a = torch.randn(1024, 1024).to(dt); b = torch.randn(1024, 1024).to(dt)
    end = time.perf_counter() + secs
    while time.perf_counter() < end: a @ b
def relu_ref():
    x = torch.randn(293944)
    for _ in range(3): torch.relu(x)
    ts = []
    for _ in range(50):
        t = time.perf_counter(); torch.relu(x); ts.append(time.perf_counter() - t)
    return st.median(ts) * 1e6
for rnd in range(3):
    time.sleep(0.5); r0 = ref(torch.bfloat16); q0 = relu_ref()
    heavy(torch.bfloat16, 1.0); r1 = ref(torch.bfloat16); q1 = relu_ref()
    time.sleep(0.5); r2 = ref(torch.bfloat16)
    heavy(torch.float32, 1.0); r3 = ref(torch.bfloat16); q3 = relu_ref()
    print(f"bf16 mm ref µs: idle {r0:.1f}  after 1 s bf16 matmul {r1:.1f}  after sleep {r2:.1f}  after 1 s f32 matmul {r3:.1f} | relu idle {q0:.1f} after bf16 {q1:.1f} after f32 {q3:.1f}")
