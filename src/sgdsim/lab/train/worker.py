"""A parameter-server worker: ``python -m sgdsim.lab.train.worker --ps HOST --port P ...``.

Every step: PULL, receive the parameters (one message per tensor, layer order), forward and
backward, send each gradient (in the order backward produced them). Without ``--overlap`` the
three phases follow each other. With it, a background thread receives the tensors while a
layer's forward pre-hook waits only for that layer's own tensors, and each gradient is queued
for a background sender by its post-accumulate-grad hook, so the uplink of the last layers
runs during the backward of the first ones.

With several parameter servers (``--ps A,B``) each holds whole layers (``models.shard_of``):
the worker pulls from all of them at once and pushes each gradient to its owner, one receiving
and one sending thread per server, as the simulator's per-PS links run concurrently.

Reports one ``step`` JSON line per completed step (time since t0, loss, and with ``--record``
the per-layer compute and per-tensor receive/send times the profile needs).
"""
from __future__ import annotations

import argparse
import json
import queue
import threading
import time
import warnings
from functools import partial

import torch

from . import wire
from .models import find_layers, load_workload, param_layers, shard_of
from .timing import LayerTimer


class Worker:
    def __init__(self, work, socks, overlap: bool, record: bool):
        self.work, self.socks, self.overlap = work, list(socks), overlap
        self.params, self.owners = param_layers(work.model)
        for p in self.params:
            p.data = p.data.contiguous()
        self.shard = shard_of(self.params, self.owners, len(self.socks))
        self.count = [self.shard.count(k) for k in range(len(self.socks))]
        self.arrived = [threading.Event() for _ in self.params]
        self.timer = LayerTimer(work.model) if record else None
        self.sendqs: list[queue.Queue] = [queue.Queue() for _ in self.socks]
        self.step = 0
        self.down_end = [0.0] * len(self.params)
        self.up_start = [0.0] * len(self.params)
        self.ready: list[int] = []
        self._install_hooks()
        if overlap:
            for q in self.sendqs:
                threading.Thread(target=self._sender, args=(q,), daemon=True).start()

    def _install_hooks(self) -> None:
        index = {id(p): i for i, p in enumerate(self.params)}
        for _, module in find_layers(self.work.model):
            mine = [index[id(p)] for p in module.parameters() if id(p) in index]
            if self.overlap and mine:
                # prepend: the wait runs before LayerTimer's pre-hook, so it is not compute
                module.register_forward_pre_hook(partial(self._wait_for, mine), prepend=True)
        for i, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(lambda p, i=i: self._grad_ready(i))

    def _wait_for(self, indices, module, args) -> None:
        for i in indices:
            self.arrived[i].wait()

    def _grad_ready(self, i: int) -> None:
        self.ready.append(i)
        if self.overlap:
            self.sendqs[self.shard[i]].put(i)

    # ------------------------------------------------------------------ communication
    def _receive_all(self, k: int) -> None:
        sock = self.socks[k]
        for _ in range(self.count[k]):
            i, _, length = wire.expect(sock, wire.TENSOR)
            wire.recv_into_tensor(sock, length, self.params[i].data)
            self.down_end[i] = wire.now()
            self.arrived[i].set()

    def _send(self, i: int) -> None:
        self.up_start[i] = wire.now()
        grad = self.params[i].grad.contiguous()
        wire.send_msg(self.socks[self.shard[i]], wire.GRAD, i, self.step, wire.tensor_bytes(grad))

    def _send_some(self, indices: list[int]) -> None:
        for i in indices:
            self._send(i)

    def _sender(self, q: queue.Queue) -> None:
        while True:
            i = q.get()
            try:
                self._send(i)
            except OSError:
                pass  # the run is over; the main thread notices on its next receive
            q.task_done()

    # ------------------------------------------------------------------ one step
    def run_step(self) -> dict:
        for p, ev in zip(self.params, self.arrived):
            p.grad = None
            ev.clear()
        self.ready = []
        t_pull = wire.now()
        for sock in self.socks:
            wire.send_msg(sock, wire.PULL, 0, self.step)
        receivers = []
        if self.overlap or len(self.socks) > 1:
            receivers = _threads(self._receive_all, [(k,) for k in range(len(self.socks))])
            if not self.overlap:
                _join(receivers)
        else:
            self._receive_all(0)
        loss = self.work.loss(self.step)
        _join(receivers)  # tensors of layers the forward did not call
        loss.backward()
        if self.timer is not None:
            self.timer.backward_done()
        if self.overlap:
            for q in self.sendqs:
                q.join()
        elif len(self.socks) == 1:
            self._send_some(list(self.ready))
        else:
            _join(_threads(self._send_some, [([i for i in self.ready if self.shard[i] == k],)
                                             for k in range(len(self.socks))]))
        rec = {"loss": float(loss)}
        if self.timer is not None:
            rec.update(self.timer.step_record(), t_pull=t_pull, down_end=list(self.down_end),
                       up_start=list(self.up_start), order=self.timer.order)
            if self.step == 0:  # what the profile's comm ops need, once
                rec.update(owners=self.owners,
                           tensor_bytes=[p.numel() * p.element_size() for p in self.params])
        self.step += 1
        return rec


def _threads(target, arg_lists) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=a, daemon=True) for a in arg_lists]
    for t in threads:
        t.start()
    return threads


def _join(threads) -> None:
    for t in threads:
        t.join()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m sgdsim.lab.train.worker")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--ps", required=True, help="address of the parameter server (several: A,B)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0, help="start this long after t0 (s)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the machine's cores are shared by every emulated host
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        work = load_workload(args.model, args.batch_size, args.seed + 1 + args.rank)
        socks = [wire.connect(host, args.port) for host in args.ps.split(",")]
        for sock in socks:
            wire.send_msg(sock, wire.HELLO, args.rank)
        t0 = 0.0
        for sock in socks:  # every server picks a start time: begin at the latest
            _, _, length = wire.expect(sock, wire.START)
            t0 = max(t0, json.loads(wire.recv_payload(sock, length))["t0"])
        worker = Worker(work, socks, args.overlap, args.record)
        time.sleep(max(0.0, t0 + args.delay - wire.now()))
        while True:
            rec = worker.run_step()
            wire.emit("step", rank=args.rank, step=worker.step - 1, t=wire.now() - t0, **rec)
    except Exception as exc:
        wire.fail(exc)


if __name__ == "__main__":
    main()
