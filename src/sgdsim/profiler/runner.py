"""Run the training steps: plain ones (no hooks) and profiled ones, interleaved.

Interleaving plain and profiled steps makes the overhead figure immune to drift (CPU frequency,
other processes): both kinds see the same conditions. Hooks are installed only around the
profiled steps, so the plain steps run exactly the user's code.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch

from ..errors import ConfigError
from .memory import os_cost_of
from .messages import first_line
from .recorder import LayerSequenceChanged, Recorder, find_layers, synced_clock
from .precision import needs_scaler
from .scaler import LossScale
from .spec import Workload

LR = 1e-3  # plain SGD; the value only has to keep the random-data training finite


@dataclass
class Measured:
    """What the profiled steps recorded; arrays are (steps, layer instances)."""

    names: list[str]
    labels: list[str]
    deps: list[tuple[int, ...]]  # forward producers of each layer instance
    param_bytes: list[int]
    param_counts: list[int]
    ready_order: list[int]  # layer instances with parameters, by gradient-ready time
    fwd: np.ndarray
    bwd: np.ndarray
    upd: np.ndarray
    profiled_steps_s: list[float]  # wall time of each measured step, with hooks
    plain_steps_s: list[float]  # and of the unprofiled step run next to it
    unused_params: int = 0
    # each plain step's cost to the OS (``memory.os_cost``): bytes faulted in, kernel seconds
    plain_faulted_bytes: list[int] = field(default_factory=list)
    plain_kernel_s: list[float] = field(default_factory=list)


def measure(work: Workload, steps: int, warmup: int, sync=None, tick=None) -> Measured:
    """``tick()`` after each warm-up and measured pair of steps (a progress bar's advance)."""
    tick = tick or (lambda: None)
    clock = time.perf_counter if sync is None else partial(synced_clock, sync)
    model = work.model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ConfigError(f"model {work.name} has no trainable parameters: nothing to train")
    opt = torch.optim.SGD(params, lr=LR)
    # float16 trains with a gradient scaler, both kinds of step alike (scaler.py)
    scaler = LossScale(params[0].device) if needs_scaler(work.autocast) else None
    rec = Recorder(find_layers(model), params, sync)
    try:
        _plain_step(work, (opt, scaler), clock)
    except ConfigError:
        raise
    except Exception as exc:  # the user's model, batch or loss does not run: say so in one line
        raise ConfigError(f"model {work.name} fails on its example batch: "
                          f"{type(exc).__name__}: {first_line(exc)}") from None
    owner, unused, ready = _discover(work, rec, params, clock, scaler)
    for _ in range(max(warmup - 1, 0)):
        _plain_step(work, (opt, scaler), clock)
        _profiled_step(work, rec, (owner, scaler), clock)
        tick()
    prof, plain, times, os_use = _measured_steps(work, rec, (owner, opt, scaler), clock, steps, tick)
    m = _summarise(work, rec, (owner, unused, ready), times, prof, plain)
    m.plain_faulted_bytes, m.plain_kernel_s = os_use
    return m


def _measured_steps(work, rec, trains, clock, steps, tick):
    """``steps`` pairs of one plain and one profiled step; with each plain step's cost to the
    OS, as (bytes faulted in, kernel seconds) lists. ``trains``: (the parameters' owners, the
    optimizer, the loss scale or None)."""
    owner, opt, scaler = trains
    plain, prof, fwd, bwd, upd = [], [], [], [], []
    faulted: list[int] = []
    kernel: list[float] = []

    def plain_step() -> None:
        step_s, fresh, kernel_s = os_cost_of(lambda: _plain_step(work, (opt, scaler), clock))
        plain.append(step_s)
        faulted.append(fresh)
        kernel.append(kernel_s)

    for i in range(steps):
        if i % 2 == 0:  # alternate which kind goes first, so neither always follows the other
            plain_step()
        step_s, f, b, u = _profiled_step(work, rec, (owner, scaler), clock)
        if i % 2 == 1:
            plain_step()
        prof.append(step_s)
        fwd.append(f)
        bwd.append(b)
        upd.append(u)
        tick()
    return prof, plain, (fwd, bwd, upd), (faulted, kernel)


def _plain_step(work: Workload, optimizer, clock) -> float:
    """The user's step. ``optimizer``: (torch's optimizer, the loss scale or None); with a
    scale, as ``GradScaler`` steps an optimizer (one unscale of every gradient, the update
    skipped on an overflow)."""
    opt, scaler = optimizer
    t0 = clock()
    loss = _checked_loss(work, work.forward()[1])
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scaled(loss).backward()
        scaler.unscale([p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None])
        if not scaler.overflowed():
            opt.step()
        scaler.update()
    opt.zero_grad(set_to_none=True)
    return clock() - t0


def _checked_loss(work: Workload, loss):
    if not (isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad):
        what = (f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor)
                else type(loss).__name__)
        raise ConfigError(f"model {work.name}: loss_fn must return a scalar tensor that "
                          f"requires grad (got {what})")
    return loss


def _profiled_step(work: Workload, rec: Recorder, update, clock, discover=False):
    """One step with hooks: (step seconds, fwd per layer, bwd per layer, upd per layer).
    ``update``: (the parameters' owners, the loss scale or None); owners None: no update."""
    owner, scaler = update
    rec.install()
    try:
        t0 = clock()
        rec.begin_step(discover)
        output, loss = work.forward()
        loss = _checked_loss(work, loss)
        if scaler is not None:  # the scaling multiply is charged to the loss
            loss = scaler.scaled(loss)
        rec.end_forward(loss, output)
        rec.start_backward()
        loss.backward()
        rec.end_backward()
        upd = _timed_update(owner, len(rec.keys), clock, scaler) if owner is not None else None
        step_s = clock() - t0
    except LayerSequenceChanged as exc:
        raise ConfigError(f"model {work.name} calls its layers differently from step to step "
                          f"({exc}); sgdsim profile needs the same layers every step") from None
    finally:
        rec.remove()
    return step_s, rec.fwd, rec.bwd, upd


def _discover(work: Workload, rec: Recorder, params, clock, scaler=None):
    """The first profiled step finds the layers and their DAG; then which layer owns each
    parameter (its first call), how many got no gradient, and the gradient-ready order."""
    _profiled_step(work, rec, (None, scaler), clock, discover=True)  # its loss scaled too
    owner: dict[int, list] = {}  # layer instance -> its parameters (first call that uses them)
    seen: set[int] = set()
    grads = {id(p) for p in params if p.grad is not None}
    for idx, (mod_i, _) in enumerate(rec.keys):
        if mod_i < 0:
            continue
        for p in rec.modules[mod_i][1].parameters():
            if id(p) in grads and id(p) not in seen:
                seen.add(id(p))
                owner.setdefault(idx, []).append(p)
    _timed_update({0: params}, 1, clock, scaler)  # the discovery step still trains
    return owner, len(params) - len(seen), _ready_order(rec.ready, params, owner)


def _timed_update(owner: dict[int, list], n_layers: int, clock, scaler=None) -> list[float]:
    """SGD applied layer by layer (p -= lr * grad, as torch.optim.SGD without momentum).
    With a loss scale, each layer's gradients are unscaled first (charged to its update);
    the overflow check and the scale's update are in the step, no layer's."""
    upd = [0.0] * n_layers
    skip = False
    with torch.no_grad():
        if scaler is not None:
            for idx, ps in owner.items():
                t0 = clock()
                scaler.unscale([p.grad for p in ps if p.grad is not None])
                upd[idx] = clock() - t0
            skip = scaler.overflowed()
        for idx, ps in owner.items():
            t0 = clock()
            for p in ps:
                if p.grad is not None and not skip:
                    p.add_(p.grad, alpha=-LR)
            upd[idx] += clock() - t0
            for p in ps:
                p.grad = None
        if scaler is not None:
            scaler.update()
    return upd


def _summarise(work, rec, discovered, times, prof, plain) -> Measured:
    n = len(rec.keys)
    owner, unused, ready = discovered
    fwd, bwd, upd = times
    names = [rec.name(i) for i in range(n)]
    labels = [_label(rec, i) if rec.keys[i][0] >= 0 else work.loss_label for i in range(n)]
    sizes = [sum(p.numel() * p.element_size() for p in owner.get(i, [])) for i in range(n)]
    counts = [sum(p.numel() for p in owner.get(i, [])) for i in range(n)]
    return Measured(
        names=names, labels=labels, deps=[tuple(sorted(d)) for d in rec.deps],
        param_bytes=sizes, param_counts=counts,
        ready_order=ready, fwd=np.array(fwd),
        bwd=np.array(bwd), upd=np.array(upd), profiled_steps_s=prof, plain_steps_s=plain,
        unused_params=unused)


def _ready_order(ready: list[int], params, owner) -> list[int]:
    """Layers with parameters, ordered by when their last parameter gradient was ready."""
    position = {id(params[j]): k for k, j in enumerate(ready)}
    last = {idx: max(position.get(id(p), -1) for p in ps) for idx, ps in owner.items()}
    return sorted(last, key=lambda idx: (last[idx], -idx))


def _label(rec: Recorder, idx: int) -> str:
    mod_i, _ = rec.keys[idx]
    module = rec.modules[mod_i][1]
    extra = module.extra_repr().replace("\n", " ")
    text = f"{type(module).__name__}({extra})"
    return text if len(text) <= 120 else text[:117] + "..."
