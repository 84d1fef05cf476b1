"""Record a torch.profiler (Kineto) Chrome trace of a few training steps for `sgdsim import kineto`.

Usage (from the repository root, with the project installed: pip install -e '.[torch]'):

    python examples/kineto/record_trace.py zoo:small-cnn --batch-size 8 -o cnn.trace.json.gz
    python examples/kineto/record_trace.py zoo:resnet50 --batch-size 32 --device cuda -o r50.json.gz
    sgdsim import kineto cnn.trace.json.gz --batch-size 8 -o cnn.json

MODEL is any `sgdsim profile` spec (zoo:NAME, FILE.py:FUNCTION, MODULE:FUNCTION). Each layer
(a module that owns parameters or has no children, as `sgdsim profile` finds them) is wrapped in
a `record_function("layer: NAME | LABEL")` range (the loss in `"loss: LABEL"`), so the
importer names layers exactly as `sgdsim profile` does. `--with-stack` records nn.Module
events instead (torch.profiler's with_stack=True; bigger traces, layers named by class, e.g.
Linear_0). `record_shapes=True` is always on: the importer takes parameter sizes from the
AccumulateGrad shapes.

tests/data/kineto/ was recorded with this script on a 2-core CPU (docs/profile-format.md).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "src"))  # runs from a checkout without installing the package

from sgdsim.profiler.recorder import find_layers  # noqa: E402
from sgdsim.profiler.spec import call_model, load_workload  # noqa: E402

LR = 1e-3  # plain SGD, as sgdsim profile; the value only keeps random-data training finite


def annotate_layers(model) -> list:
    """Open a record_function range in each layer's pre-hook and close it in its post-hook."""
    handles, open_ranges = [], []
    for name, module in find_layers(model):
        label = f"{type(module).__name__}({module.extra_repr()})".replace("\n", " ")
        label = label if len(label) <= 120 else label[:117] + "..."  # as sgdsim profile

        def pre(_mod, _args, name=name, label=label):
            rf = record_function(f"layer: {name} | {label}")
            rf.__enter__()
            open_ranges.append(rf)

        def post(_mod, _args, _out):
            open_ranges.pop().__exit__(None, None, None)

        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    return handles


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="zoo:NAME[?k=v], FILE.py:FUNCTION or MODULE:FUNCTION")
    ap.add_argument("--batch-size", type=int, required=True, help="per-worker mini-batch")
    ap.add_argument("--steps", type=int, default=3, help="recorded steps (default 3)")
    ap.add_argument("--warmup", type=int, default=2, help="unrecorded warm-up steps (default 2)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--with-stack", action="store_true",
                    help="nn.Module events (with_stack=True) instead of layer ranges")
    ap.add_argument("--seed", type=int, default=0, help="weights and data seed (default 0)")
    ap.add_argument("-o", "--output", required=True, help="trace file (.json or .json.gz)")
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    work = load_workload(args.model, args.batch_size).to(device)
    model = work.model.train()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=LR)
    handles = [] if args.with_stack else annotate_layers(model)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    out = str(args.output)
    # One cycle: warm-up steps are run but not kept, then `steps` steps, each a ProfilerStep#N.
    with profile(activities=activities, record_shapes=True, with_stack=args.with_stack,
                 schedule=schedule(wait=0, warmup=args.warmup, active=args.steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(args.warmup + args.steps):
            output = call_model(model, work.inputs)
            with record_function(f"loss: {work.loss_label}"):  # names the loss pseudo-layer
                loss = work.loss_fn(output, work.target)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            prof.step()
    for h in handles:
        h.remove()
    print(f"wrote {out}: {args.model}, batch {args.batch_size}, {args.steps} steps on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
