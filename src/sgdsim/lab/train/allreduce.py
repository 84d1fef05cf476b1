"""A synchronous all-reduce rank: ``python -m sgdsim.lab.train.allreduce --rank R --world W``.

torch.distributed with gloo over the lab's shaped NICs (``MASTER_ADDR``/``MASTER_PORT`` and
``GLOO_SOCKET_IFNAME=eth0`` come from the runner). With ``--overlap`` the model is wrapped in
DistributedDataParallel, whose bucketed all-reduces start during the backward; without it the
gradients are all-reduced after the backward, one call per layer (its tensors flattened into one
buffer), as the profile's per-layer transfers and the simulator assume: every call pays gloo's
per-call latency once (``netbench --gloo`` measures it). Rank 0 picks t0 and broadcasts it, so
every rank starts its first step at the same moment.
"""
from __future__ import annotations

import argparse
import datetime
import time
import warnings

import torch
import torch.distributed as dist

from . import wire
from .models import call_model, load_workload, param_layers
from .trainers import LAB_DDP_BUCKET_MB


def _start_time(rank: int) -> float:
    t0 = torch.tensor([wire.now() + 0.3 if rank == 0 else 0.0], dtype=torch.float64)
    dist.broadcast(t0, 0)
    return float(t0.item())


def _by_layer(params, owners: list[str]) -> list[list[torch.Tensor]]:
    layers: dict[str, list[torch.Tensor]] = {}
    for p, name in zip(params, owners):
        layers.setdefault(name, []).append(p)
    return list(layers.values())


def _all_reduce_layer(layer: list[torch.Tensor], world: int) -> None:
    grads = [p.grad for p in layer]
    flat = torch.cat([g.reshape(-1) for g in grads]) if len(grads) > 1 else grads[0].reshape(-1)
    dist.all_reduce(flat)
    flat.div_(world)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def _step(net, work, params, layers, step: int, world: int, overlap: bool, lr: float) -> float:
    for p in params:
        p.grad = None
    inputs, target = work.batch_fn(step)
    loss = work.loss_fn(call_model(net, inputs), target)
    loss.backward()
    if not overlap:
        for layer in reversed(layers):  # the order backward produced them
            _all_reduce_layer(layer, world)
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-lr)
    return float(loss)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.train.allreduce")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--bucket-mb", type=float, default=LAB_DDP_BUCKET_MB,
                    help="DDP's bucket size with --overlap (PyTorch's own default is 25)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the machine's cores are shared by every emulated host
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world,
                                timeout=datetime.timedelta(seconds=180))
        work = load_workload(args.model, args.batch_size, args.seed + 1 + args.rank)
        params, owners = param_layers(work.model)
        layers = _by_layer(params, owners)
        net = work.model
        if args.overlap:
            net = torch.nn.parallel.DistributedDataParallel(work.model, bucket_cap_mb=args.bucket_mb)
        else:  # DDP does this broadcast itself
            for p in params:
                dist.broadcast(p.data, 0)
        t0 = _start_time(args.rank)
        if args.rank == 0:
            wire.emit("start", t0=t0)
        time.sleep(max(0.0, t0 - wire.now()))
        step, cpu0 = 0, time.process_time()
        while True:
            loss = _step(net, work, params, layers, step, args.world, args.overlap, args.lr)
            wire.emit("step", rank=args.rank, step=step, t=wire.now() - t0, loss=loss,
                      cpu=time.process_time() - cpu0)
            step += 1
    except Exception as exc:
        wire.fail(exc)


if __name__ == "__main__":
    main()
