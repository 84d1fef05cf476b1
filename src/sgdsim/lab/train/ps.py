"""The parameter server: ``python -m sgdsim.lab.train.ps --model SPEC --workers W ...``.

Holds the model's parameters and serves W workers, one thread per connection (protocol in
``wire.py``). async: each gradient tensor is applied as soon as it arrived (SGD, in place).
sync: gradients of all W workers for a step are summed per tensor and applied once (mean); the
downlink of step k+1 is released to everyone when all W workers have sent step k (a barrier).
With ``--shards M`` it is one of M servers and holds only the layers ``models.shard_of`` gives
its ``--shard`` (the simulator's placement); the worker talks to all of them at once.

Reports on stdout (JSON lines): ``listening``, ``start`` (t0 on the machine-wide monotonic
clock), with ``--record`` a ``ps_step`` per worker step, and on SIGTERM a ``summary``
(relative parameter change, updates applied) before exiting.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import threading
import time

import torch

from . import wire
from .models import load_workload, param_layers, shard_of


class Server:
    def __init__(self, params, workers: int, mode: str, lr: float, record: bool,
                 mine: list[int] | None = None):
        self.params = [p.detach() for p in params]
        self.mine = list(range(len(self.params))) if mine is None else list(mine)
        self.initial = [p.clone() for p in self.params]
        self.workers, self.mode, self.lr, self.record = workers, mode, lr, record
        self.locks = [threading.Lock() for _ in self.params]
        self.acc = [torch.zeros_like(p) for p in self.params] if mode == "sync" else []
        self.count = [0] * len(self.params)
        self.barrier = threading.Condition()
        self.round = 0      # sync: steps every worker has completed
        self.arrived = 0    # sync: workers done with the current round
        self.updates = 0
        self.cpu0 = 0.0

    # ------------------------------------------------------------------ per connection
    def handle(self, rank: int, conn: socket.socket, t0: float) -> None:
        try:
            wire.send_msg(conn, wire.START, payload=json.dumps({"t0": t0}).encode())
            copies = [torch.empty_like(p) for p in self.params]
            grads = [torch.empty_like(p) for p in self.params]
            while True:
                _, step, _ = wire.expect(conn, wire.PULL)
                if self.mode == "sync":
                    with self.barrier:
                        self.barrier.wait_for(lambda: self.round >= step)
                down_start = self._send_model(conn, step, copies)
                up_end, upd = self._receive_grads(conn, grads)
                if self.mode == "sync":
                    self._arrive()
                if self.record:
                    wire.emit("ps_step", rank=rank, step=step, down_start=down_start,
                              up_end=up_end, upd=upd)
        except (ConnectionError, OSError):
            return  # the worker went away (the run is over, or it failed: the runner sees it)
        except BaseException as exc:  # a bug here must not leave the run hanging
            wire.emit("error", message=f"{type(exc).__name__}: {exc}")
            os._exit(2)

    def _send_model(self, conn, step: int, copies) -> list[float]:
        starts = [0.0] * len(self.params)
        for i in self.mine:
            with self.locks[i]:  # a consistent snapshot of the tensor, not a torn update
                copies[i].copy_(self.params[i])
            starts[i] = wire.now()
            wire.send_msg(conn, wire.TENSOR, i, step, wire.tensor_bytes(copies[i]))
        return starts

    def _receive_grads(self, conn, grads) -> tuple[list[float], list[float]]:
        n = len(self.params)
        up_end, upd = [0.0] * n, [0.0] * n
        for _ in self.mine:
            i, _, length = wire.expect(conn, wire.GRAD)
            wire.recv_into_tensor(conn, length, grads[i])
            up_end[i] = wire.now()
            self._apply(i, grads[i])
            upd[i] = wire.now() - up_end[i]
        return up_end, upd

    def _apply(self, i: int, grad: torch.Tensor) -> None:
        with self.locks[i]:
            if self.mode == "async":
                self.params[i].add_(grad, alpha=-self.lr)
                self.updates += 1
                return
            self.acc[i].add_(grad)
            self.count[i] += 1
            if self.count[i] == self.workers:
                self.params[i].add_(self.acc[i], alpha=-self.lr / self.workers)
                self.acc[i].zero_()
                self.count[i] = 0
                self.updates += 1

    def _arrive(self) -> None:
        with self.barrier:
            self.arrived += 1
            if self.arrived == self.workers:
                self.arrived = 0
                self.round += 1
                self.barrier.notify_all()

    # ------------------------------------------------------------------ whole run
    def summary(self) -> dict:
        pairs = [(self.params[i], self.initial[i]) for i in self.mine]
        moved = sum(float((p - q).pow(2).sum()) for p, q in pairs)
        norm = sum(float(q.pow(2).sum()) for _, q in pairs)
        return {"param_change": (moved / norm) ** 0.5 if norm else moved ** 0.5,
                "tensor_updates": self.updates, "rounds": self.round,
                "cpu_s": time.process_time() - self.cpu0}  # every thread's, since t0

    def serve(self, port: int) -> None:
        lsock = socket.create_server(("0.0.0.0", port), backlog=self.workers + 8)
        wire.emit("listening", port=port)
        conns = {}
        while len(conns) < self.workers:
            conn, _ = lsock.accept()
            wire.tune(conn)
            rank, _, _ = wire.expect(conn, wire.HELLO)
            conns[rank] = conn
        t0 = wire.now() + 0.2  # every worker starts its first step at t0
        self.cpu0 = time.process_time()
        wire.emit("start", t0=t0)
        for rank, conn in sorted(conns.items()):
            threading.Thread(target=self.handle, args=(rank, conn, t0), daemon=True).start()
        while True:
            time.sleep(3600)  # the runner ends the run with SIGTERM


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.train.ps")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--mode", choices=["async", "sync"], default="async")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--shard", type=int, default=0, help="this server's index")
    ap.add_argument("--shards", type=int, default=1, help="parameter servers in the job")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the machine's cores are shared by every emulated host
    try:
        params, owners = param_layers(load_workload(args.model, args.batch_size, args.seed).model)
        shard = shard_of(params, owners, args.shards)
        server = Server([p.contiguous() for p in params], args.workers, args.mode, args.lr,
                        args.record, [i for i, k in enumerate(shard) if k == args.shard])

        def _stop(signum, frame):
            wire.emit("summary", **server.summary())
            os._exit(0)

        signal.signal(signal.SIGTERM, _stop)
        server.serve(args.port)
    except Exception as exc:
        wire.fail(exc)


if __name__ == "__main__":
    main()
