"""A second parameter-server implementation, held out from every fit: ``torch.distributed.rpc``.

``python -m sgdsim.lab.train.rpc_ps --rank R --world W+1 --mode async|sync ...``; rank 0 is the
server, ranks 1..W the workers. It is the textbook PyTorch PS, not the lab's own trainer
(``ps.py``/``worker.py``): a worker pulls the whole model with one ``rpc_sync`` (the tensors
pickled into one TensorPipe message over libuv TCP, shared memory switched off so every byte
crosses the shaped NIC), trains a step, and pushes all its gradients with one more call. The
server runs the calls on its RPC thread pool; async applies each push at once, sync sums the
W pushes of a step and releases the next pull when all W arrived (a barrier). No overlap, no
per-layer messages, its own serialisation and threads: nothing of it was ever fitted.

Reports the lab's JSON lines (``wire.emit``): ``start`` (server), ``step`` (workers, rank
0..W-1), and ``summary`` on SIGTERM (server).
"""
from __future__ import annotations

import argparse
import os
import signal
import threading
import time
import warnings

import torch
import torch.distributed.rpc as rpc

from . import wire
from .models import call_model, load_workload, param_layers

SERVER = "ps"
_STATE: dict = {}  # the server's: its model, lock, barrier (RPC handlers are module functions)


class _Server:
    def __init__(self, params, workers: int, mode: str, lr: float):
        self.params = [p.detach().contiguous() for p in params]
        self.initial = [p.clone() for p in self.params]
        self.workers, self.mode, self.lr = workers, mode, lr
        self.lock = threading.Lock()
        self.barrier = threading.Condition(self.lock)
        self.acc = [torch.zeros_like(p) for p in self.params]
        self.round = 0      # sync: steps every worker has pushed
        self.arrived = 0
        self.updates = 0
        self.t0 = 0.0
        self.cpu0 = 0.0

    def pull(self, step: int) -> list[torch.Tensor]:
        with self.barrier:
            if self.mode == "sync":
                self.barrier.wait_for(lambda: self.round >= step)
            return [p.clone() for p in self.params]

    def push(self, grads: list[torch.Tensor]) -> None:
        with self.barrier:
            if self.mode == "async":
                for p, g in zip(self.params, grads):
                    p.add_(g, alpha=-self.lr)
                self.updates += 1
                return
            for a, g in zip(self.acc, grads):
                a.add_(g)
            self.arrived += 1
            if self.arrived == self.workers:
                for p, a in zip(self.params, self.acc):
                    p.add_(a, alpha=-self.lr / self.workers)
                    a.zero_()
                self.arrived, self.round = 0, self.round + 1
                self.updates += 1
                self.barrier.notify_all()

    def summary(self) -> dict:
        moved = sum(float((p - q).pow(2).sum()) for p, q in zip(self.params, self.initial))
        norm = sum(float(q.pow(2).sum()) for q in self.initial)
        return {"param_change": (moved / norm) ** 0.5 if norm else moved ** 0.5,
                "tensor_updates": self.updates * len(self.params), "rounds": self.round,
                "cpu_s": time.process_time() - self.cpu0}  # every thread's, since t0


def _pull(step: int) -> list[torch.Tensor]:
    return _STATE["server"].pull(step)


def _push(grads: list[torch.Tensor]) -> None:
    _STATE["server"].push(grads)


def _t0() -> float:
    return _STATE["server"].t0


def _options(address: str, port: int, workers: int) -> rpc.TensorPipeRpcBackendOptions:
    # uv (TCP) only: TensorPipe would otherwise see one machine and take shared memory
    return rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://{address}:{port}", num_worker_threads=max(16, 2 * workers + 4),
        rpc_timeout=600, _transports=["uv"], _channels=["basic"])


def _serve(args, params) -> None:
    server = _Server(params, args.world - 1, args.mode, args.lr)
    _STATE["server"] = server

    def _stop(signum, frame):
        wire.emit("summary", **server.summary())
        os._exit(0)

    signal.signal(signal.SIGTERM, _stop)
    server.t0 = wire.now() + 0.5
    rpc.init_rpc(SERVER, rank=0, world_size=args.world,
                 rpc_backend_options=_options(args.address, args.port, args.world - 1))
    server.t0 = wire.now() + 0.5  # every worker is connected once init_rpc returns
    server.cpu0 = time.process_time()
    wire.emit("start", t0=server.t0)
    while True:
        time.sleep(3600)  # the runner ends the run with SIGTERM


def _train(args, work) -> None:
    rank = args.rank - 1
    params, _ = param_layers(work.model)
    rpc.init_rpc(f"worker{rank}", rank=args.rank, world_size=args.world,
                 rpc_backend_options=_options(args.address, args.port, args.world - 1))
    t0 = rpc.rpc_sync(SERVER, _t0)
    time.sleep(max(0.0, t0 + args.delay - wire.now()))  # a start stagger: this worker's delay
    step, cpu0 = 0, time.process_time()
    while True:
        fresh = rpc.rpc_sync(SERVER, _pull, args=(step,))
        with torch.no_grad():
            for p, v in zip(params, fresh):
                p.copy_(v)
        for p in params:
            p.grad = None
        inputs, target = work.batch_fn(step)
        loss = work.loss_fn(call_model(work.model, inputs), target)
        loss.backward()
        rpc.rpc_sync(SERVER, _push, args=([p.grad for p in params],))
        wire.emit("step", rank=rank, step=step, t=wire.now() - t0, loss=float(loss),
                  cpu=time.process_time() - cpu0)
        step += 1


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.train.rpc_ps")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--rank", type=int, required=True, help="0: the server; 1..W: workers")
    ap.add_argument("--world", type=int, required=True, help="workers + 1")
    ap.add_argument("--address", required=True, help="the server's address")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=["async", "sync"], default="async")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0, help="a worker's first step starts this "
                    "many seconds after the common start (the runner's start stagger)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the machine's cores are shared by every emulated host
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        work = load_workload(args.model, args.batch_size, args.seed + args.rank)
        if args.rank == 0:
            _serve(args, param_layers(work.model)[0])
        else:
            _train(args, work)
    except Exception as exc:
        wire.fail(exc)


if __name__ == "__main__":
    main()
