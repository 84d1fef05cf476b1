"""Hooks that time one training step layer by layer and discover the layer DAG.

A *layer* is a leaf-ish module: one that owns parameters directly or has no children (we do not
descend into a layer, so layers never nest). A module called k > 1 times per step gives k layer
instances (``name``, ``name#2``, ...).

Timing is by intervals on one clock: every hook event closes the interval since the previous
event and charges it to a layer, so the layers' times add up to the whole forward and backward
pass, glue code between modules included (the residual add before a ReLU is charged to the
ReLU, in both directions), while the hooks' own bookkeeping is left out (each hook restarts the
clock when it is done).

* Forward: a layer's pre-hook charges the glue since the last event to that layer, its
  post-hook charges its own body; after the model returns, the rest (output glue and the loss)
  is charged to the ``loss`` pseudo-layer.
* Backward: each layer's post-hook registers a pre-hook on the autograd node that produced each
  of its outputs. That node is the first of the layer's backward work to run, so its pre-hook
  marks the start of the layer's backward; the layer is charged until the next layer starts or
  ``backward()`` returns. This needs no gradient on the layer's input (so the first layer is
  timed, AccumulateGrad of its parameters included), and no wrapping of outputs (so in-place
  modules such as ReLU(inplace=True) are fine, unlike ``register_full_backward_hook``).
  Parameter gradient readiness comes from ``register_post_accumulate_grad_hook``.

Dependencies (discovery step only): a layer depends on the layers that produced its inputs,
found by tensor identity (inputs in args and kwargs, which also covers tensors without grad)
and by walking the autograd graph back from its outputs until nodes owned by other layers.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial

import torch

LOSS_KEY = (-1, 0)  # (module index, call number) of the loss pseudo-layer


class LayerSequenceChanged(Exception):
    """The model called its layers in a different order than in the discovery step."""


def find_layers(model) -> list[tuple[str, object]]:
    """(qualified name, module) of every layer, in definition order, shared modules once."""
    found: list[tuple[str, object]] = []
    seen: set[int] = set()

    def walk(name: str, module) -> None:
        if id(module) in seen:
            return
        seen.add(id(module))
        children = list(module.named_children())
        if not children or next(module.parameters(recurse=False), None) is not None:
            found.append((name or "model", module))
            return
        for child_name, child in children:
            walk(f"{name}.{child_name}" if name else child_name, child)

    walk("", model)
    return found


def iter_tensors(obj):
    """Tensors inside nested tuples, lists and mappings (HF ModelOutput is a mapping)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from iter_tensors(item)
    elif isinstance(obj, Mapping):
        for item in obj.values():
            yield from iter_tensors(item)


class Recorder:
    """Per-layer forward/backward durations of one step; the DAG on the discovery step."""

    def __init__(self, modules, params, sync=None):
        self.modules = modules  # [(name, module)] from find_layers
        self.params = params  # trainable parameters, hook index = position
        self.clock = time.perf_counter if sync is None else partial(synced_clock, sync)
        self.keys: list[tuple[int, int]] = []  # layer instance -> (module index, call number)
        self.deps: list[set[int]] = []
        self._bwd_hooks: list = []
        self._handles: list = []
        self.discover = False

    # ------------------------------------------------------------------ install / remove

    def install(self) -> None:
        for i, (_, module) in enumerate(self.modules):
            self._handles.append(module.register_forward_pre_hook(partial(self._pre, i)))
            self._handles.append(module.register_forward_hook(partial(self._post, i),
                                                              with_kwargs=True))
        for j, p in enumerate(self.params):
            self._handles.append(p.register_post_accumulate_grad_hook(partial(self._ready, j)))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def name(self, idx: int) -> str:
        mod_i, call = self.keys[idx]
        if (mod_i, call) == LOSS_KEY:
            taken = {n for n, _ in self.modules}
            return "loss" if "loss" not in taken else "loss#fn"
        base = self.modules[mod_i][0]
        return base if call == 0 else f"{base}#{call + 1}"

    # ------------------------------------------------------------------ one step

    def begin_step(self, discover: bool) -> None:
        """Call right before the model: resets the step's records and starts the clock."""
        self.discover = discover
        if discover:
            self.keys, self.deps, self._bwd_hooks = [], [], []
        n = len(self.keys)
        self.fwd, self.bwd = [0.0] * n, [0.0] * n
        self.calls = [0] * len(self.modules)
        self.seen, self.active, self.nested, self.in_forward = 0, None, 0, True
        self.node_owner: dict[int, int] = {}
        self.keep: list = []  # keeps nodes and tensors alive so that their ids stay unique
        self.tensor_owner: dict[int, int] = {}
        self.ready: list[int] = []
        self.t_last = self.clock()

    def end_forward(self, loss, output) -> None:
        """Call when the loss is computed: charges output glue and the loss to ``loss``."""
        t0 = self.clock()
        self.in_forward = False
        idx = self._instance(LOSS_KEY)
        self.fwd[idx] += t0 - self.t_last
        if self.seen != len(self.keys):
            raise LayerSequenceChanged(f"{len(self.keys) - self.seen} layer call(s) missing")
        if self.discover:
            deps = self._input_owners(output) | self._trace(loss.grad_fn, idx)
            # The loss ends the forward pass: every layer output nobody consumed is an output
            # of the model (the importer's sink rule), so the loss waits for it.
            consumed = set().union(*self.deps[:idx])
            self.deps[idx] = (deps | (set(range(idx)) - consumed)) - {idx}
        self.loss_idx = idx
        self.t_last = self.clock()

    def start_backward(self) -> None:
        self.bwd_cur = self.loss_idx  # until the first layer node runs: the loss's backward
        self.t_last = self.clock()

    def end_backward(self) -> None:
        self.bwd[self.bwd_cur] += self.clock() - self.t_last
        self.node_owner, self.keep, self.tensor_owner = {}, [], {}

    # ------------------------------------------------------------------ hooks

    def _pre(self, mod_i, module, args):
        # A layer called inside another layer is part of that layer's time; one called in the
        # backward pass (activation checkpointing recomputes forwards) is part of the backward
        # of the layer being differentiated.
        if self.active is not None or not self.in_forward:
            self.nested += 1
            return
        t0 = self.clock()
        call = self.calls[mod_i]
        self.calls[mod_i] = call + 1
        idx = self._instance((mod_i, call))
        self.fwd[idx] += t0 - self.t_last  # glue since the previous event feeds this layer
        self.active = idx
        self.t_last = self.clock()

    def _post(self, mod_i, module, args, kwargs, output):
        if self.nested:
            self.nested -= 1
            return
        t0 = self.clock()
        idx = self.active
        self.fwd[idx] += t0 - self.t_last
        if self.discover:
            self.deps[idx] = (self._input_owners((args, kwargs)) |
                              set().union(*(self._trace(t.grad_fn, idx)
                                            for t in iter_tensors(output)))) - {idx}
        self._claim_outputs(idx, output)
        self.active = None
        self.t_last = self.clock()

    def _bwd(self, idx, grad_outputs):
        t0 = self.clock()
        self.bwd[self.bwd_cur] += t0 - self.t_last
        self.bwd_cur = idx
        self.t_last = self.clock()

    def _ready(self, j, param):
        t0 = time.perf_counter()
        self.ready.append(j)
        self.t_last += time.perf_counter() - t0  # not a boundary: just leave our time out

    # ------------------------------------------------------------------ helpers

    def _instance(self, key) -> int:
        idx = self.seen
        self.seen += 1
        if self.discover:
            self.keys.append(key)
            self.deps.append(set())
            self._bwd_hooks.append(partial(self._bwd, idx))
            self.fwd.append(0.0)
            self.bwd.append(0.0)
        elif idx >= len(self.keys) or self.keys[idx] != key:
            raise LayerSequenceChanged(f"layer call {idx} differs from the first step")
        return idx

    def _claim_outputs(self, idx, output) -> None:
        for t in iter_tensors(output):
            if self.discover:
                self.tensor_owner[id(t)] = idx
                self.keep.append(t)
            node = t.grad_fn
            if node is None:
                continue
            if id(node) not in self.node_owner:
                self.keep.append(node)
                try:
                    node.register_prehook(self._bwd_hooks[idx])
                except (AttributeError, RuntimeError):  # node type without hooks: not timed
                    pass
            # Last writer wins for the DAG: a pass-through layer (output is its input, e.g.
            # nn.Identity) becomes the producer, but the backward hook stays with the layer
            # that created the node, since the pass-through does no backward work.
            self.node_owner[id(node)] = idx

    def _input_owners(self, inputs) -> set[int]:
        owners = (self.tensor_owner.get(id(t)) for t in iter_tensors(inputs))
        return {o for o in owners if o is not None}

    def _trace(self, node, idx) -> set[int]:
        """Layers owning the nearest autograd nodes behind ``node`` (its glue is crossed)."""
        found: set[int] = set()
        stack, visited = [node], set()
        while stack:
            n = stack.pop()
            if n is None or id(n) in visited:
                continue
            visited.add(id(n))
            owner = self.node_owner.get(id(n))
            if owner is not None and owner != idx:
                found.add(owner)
                continue
            stack.extend(nxt for nxt, _ in n.next_functions)
        return found


def synced_clock(sync) -> float:
    sync()  # on CUDA, wait for queued kernels so that the time stamp means "done"
    return time.perf_counter()
