"""Memory that must fit (issue 37): per device, the model states (weights, gradients, Adam's
states, each sharded by ZeRO) and the activations a pipeline stage keeps (Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models", 2022, Table 2 and §4.2.3).

Mixed-precision Adam as Megatron-LM keeps it: per parameter 2 bytes of 16-bit weights, 4 of
fp32 gradients (its main-gradient buffer) and 12 of fp32 master weights, momentum and
variance: 18 bytes (Megatron-LM's distributed-optimizer table, "bf16 param, fp32 grads";
Korthikanti et al. Figure 1 counts the same). In fp32: 4 + 4 + 8 = 16 bytes. (DeepSpeed's
fp16 gradients would need 16; Megatron's fp16 with fp16 gradients 20.) ZeRO-1 shards the
optimizer's bytes over the data-parallel ranks, ZeRO-2 the gradients too, ZeRO-3 everything.
Not counted: the framework's workspace, fragmentation and communication buffers.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layout import Layout
from .model import Transformer

GiB = 1 << 30
# bytes per parameter of (weights, gradients, optimizer states), by precision
STATE_BYTES = {"fp32": (4, 4, 8)}
MIXED_STATE_BYTES = (2, 4, 12)  # bf16, fp16, fp8


@dataclass(frozen=True)
class Memory:
    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations

    def fits(self, capacity_bytes: float) -> bool:
        return self.total <= capacity_bytes

    def shortfall(self, capacity_bytes: float) -> str:
        return f"needs {self.total / GiB:.1f} GiB of {capacity_bytes / GiB:.1f} GiB on each device"


def stage_params(model: Transformer, layout: Layout) -> float:
    """Parameters on the device that holds the most: L/p blocks split by tp, and the first
    (or last) stage's word embeddings, split by tp (GPT ties them: both ends hold a copy)."""
    blocks = model.layers / layout.pp * model.layer_params() / layout.tp
    return blocks + model.vocab * model.hidden / layout.tp + (0 if model.glu else model.seq * model.hidden)


def layer_activation_bytes(model: Transformer, layout: Layout) -> float:
    """Bytes one block keeps for the backward pass, per micro-batch (Korthikanti Table 2; its
    34 = 15 attention and norms + 19 MLP is for a 4h GeLU MLP, scaled here by ffn/4h, ×1.5
    for SwiGLU's three tensors)."""
    s, b, h, a, t = model.seq, layout.mb, model.hidden, model.heads, layout.tp
    sbh = s * b * h
    mlp = 19 * model.ffn / (4 * h) * (1.5 if model.glu else 1.0)
    if layout.recompute == "full":
        return 2 * sbh / (t if layout.sp else 1)  # the block's input only
    if layout.sp:
        kept = 15 + mlp
        return sbh / t * (kept if layout.recompute == "selective" else kept + 5 * a * s / h)
    replicated = 10  # norms and dropout masks outside the tensor-parallel regions
    split = 5 + mlp  # 24 for GPT: what tensor parallelism divides
    attention = 0.0 if layout.recompute == "selective" else 5 * a * s / (h * t)
    return sbh * (replicated + split / t + attention)


def in_flight(layout: Layout) -> float:
    """Micro-batches whose activations the first stage holds at once, in units of its L/p
    blocks: p for 1F1B, m for GPipe, p·(1 + (p − 1)/(p·v)) interleaved (Korthikanti §4.2.3)."""
    p, m = layout.pp, layout.micro_batches
    if layout.schedule == "gpipe":
        return m
    if layout.schedule == "interleaved":
        return min(p * (1 + (p - 1) / (p * layout.v)), m * 1.0)
    return min(p, m)


def memory(model: Transformer, layout: Layout) -> Memory:
    params = stage_params(model, layout)
    d, z = layout.dp, layout.zero
    weight_b, grad_b, optimizer_b = STATE_BYTES.get(layout.precision, MIXED_STATE_BYTES)
    acts = layer_activation_bytes(model, layout) * model.layers / layout.pp * in_flight(layout)
    acts += layout.mb * model.seq * model.hidden / layout.tp  # the embeddings' dropout mask
    return Memory(weights=params * weight_b / (d if z >= 3 else 1),
                  gradients=params * grad_b / (d if z >= 2 else 1),
                  optimizer=params * optimizer_b / (d if z >= 1 else 1), activations=acts)
