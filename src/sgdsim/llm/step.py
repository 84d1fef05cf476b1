"""One training step of a large model on a layout (issue 37): op times by roofline, the
collectives on the links they use, the pipeline simulated (``pipeline.py``).

- **Compute**: each GEMM takes max(FLOPs / (peak · efficiency · wave use), bytes / HBM), wave
  use = tiles / (waves · SMs) for 128×128 output tiles (a GEMM too small to fill the SMs
  wastes the rest of its last wave); element-wise ops (norms, softmax, activations, dropout,
  residuals) move their bytes at the HBM bandwidth. The backward pass is twice the forward;
  full recomputation adds a forward, selective recomputation the attention core. Or, with a
  measured block (``block_profile.py``), its forward, backward and attention core as measured.
- **Tensor parallelism** (Megatron): two all-reduces of the block's activations per forward
  and two per backward (two more with full recomputation), each 2(t − 1)/t · bytes over the
  intra-node link; with sequence parallelism, a reduce-scatter and an all-gather of the same
  total volume.
- **Pipeline**: a send of one micro-batch's activations between stages, split over the tp
  NICs (SC'21's scatter/gather); the schedule is simulated, the bubble comes out of it.
- **Shared NICs**: traffic that leaves a node shares the node's NICs with the other ranks
  of the node sending at the same time (``nic_flow_Bps``).
- **Data parallelism**: the gradients all-reduced after the pipeline flush (2(d − 1)/d ·
  bytes per GPU's NIC); with ZeRO-2 a reduce-scatter every micro-batch and an all-gather
  after the step; with ZeRO-3 an all-gather of each chunk's weights before its forward and
  its backward and a reduce-scatter after, every micro-batch (1.5× plain DP's volume with one
  micro-batch); then Adam's update at the HBM bandwidth.
Nothing overlaps communication with compute (as SC'21's runs did not).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .block_profile import BlockTimes
from .devices import Device
from .layout import Layout
from .memory import Memory, memory, stage_params
from .model import Transformer
from .ops import ACT_B, BlockOp, block_ops, output_ops
from .pipeline import PipelineRun, simulate

TILE = 128
ADAM_BYTES_PER_PARAM = 28  # reads and writes of fp32 master, momentum, variance, the gradient, bf16 weights


@dataclass(frozen=True)
class StepPrediction:
    step_s: float
    tokens_per_s: float
    achieved_flops_per_gpu: float  # model FLOPs (with recomputation, as SC'21 counts) / time / GPU
    mfu: float  # model FLOPs without recomputation / time / GPU / peak
    bubble: float
    parts_s: dict  # seconds per part of the step on the busiest device
    memory: Memory
    fits: bool


def op_s(op: BlockOp, dev: Device, peak: float) -> float:
    """One op's time on one device: its bytes at the HBM bandwidth, or, for a GEMM, the longer
    of that and its FLOPs at the sustained peak over the SMs its waves keep busy."""
    if not op.gemm:
        return op.traffic / dev.hbm_Bps
    tiles = math.ceil(op.m / TILE) * math.ceil(op.n / TILE) * op.count
    waves = math.ceil(tiles / dev.sms)
    use = tiles / (waves * dev.sms)
    return max(op.flops / (peak * dev.gemm_efficiency * use), op.traffic / dev.hbm_Bps)


def block_forward_s(model: Transformer, lay: Layout, dev: Device, peak: float) -> tuple[float, float]:
    """(whole block, its attention core): one micro-batch's forward on one device."""
    total = core = 0.0
    for op in block_ops(model, lay.mb, lay.tp):
        dt = op_s(op, dev, peak)
        total += dt
        core += dt if op.core else 0.0
    return total, core


def block_costs(model: Transformer, lay: Layout, dev: Device, peak: float,
                block: BlockTimes | None = None) -> tuple[float, float, float]:
    """(forward, backward, attention core's forward) of one block and micro-batch on one
    device: measured (``block_profile.py``), or by roofline with the backward twice the forward."""
    if block is not None:
        block.matches(model, lay)
        return block.forward_s, block.backward_s, block.core_forward_s
    fwd, core = block_forward_s(model, lay, dev, peak)
    return fwd, 2 * fwd, core


def tp_collective_s(model: Transformer, lay: Layout, dev: Device) -> float:
    """One all-reduce (or reduce-scatter + all-gather) of a micro-batch's activations."""
    t = lay.tp
    if t == 1:
        return 0.0
    return 2 * (t - 1) / t * ACT_B * lay.mb * model.seq * model.hidden / link_Bps(lay, dev, "tp")


def stage_times(model: Transformer, lay: Layout, dev: Device,
                block: BlockTimes | None = None) -> tuple[list, list, dict]:
    """Per global stage (p·v of them), one micro-batch's forward and backward seconds."""
    peak = dev.peak(lay.precision)
    fwd_block, bwd_block, core = block_costs(model, lay, dev, peak, block)
    comm = tp_collective_s(model, lay, dev)
    re_compute = {"none": 0.0, "selective": core, "full": fwd_block}[lay.recompute]
    re_comm = 2 * comm if lay.recompute == "full" else 0.0
    per_chunk = model.layers // (lay.pp * lay.v)
    f_block, b_block = fwd_block + 2 * comm, bwd_block + 2 * comm + re_compute + re_comm
    G = lay.pp * lay.v
    fwd, bwd = [per_chunk * f_block] * G, [per_chunk * b_block] * G
    gemm, loss = output_ops(model, lay.mb, lay.tp)
    logits = op_s(gemm, dev, peak) + op_s(loss, dev, peak)
    fwd[-1] += logits
    bwd[-1] += 2 * logits
    gather, scatter = zero_micro_batch_s(model, lay, dev)
    fwd, bwd = [f + gather for f in fwd], [b + gather + scatter for b in bwd]
    # the last device's work per micro-batch (it holds the logits): its compute and its collectives
    parts = {"compute": per_chunk * lay.v * (fwd_block + bwd_block + re_compute) + 3 * logits,
             "tensor-parallel": per_chunk * lay.v * (4 * comm + re_comm),
             "data-parallel": lay.v * (2 * gather + scatter)}
    return fwd, bwd, parts


def nic_flow_Bps(lay: Layout, dev: Device, dim: str) -> float:
    """What one flow of ``dim``'s traffic leaving a node gets when the node's GPUs send at once.
    Of the node's ranks, those whose ``dim`` traffic leaves it at the same time number
    min(GPUs per node, ``dim``'s stride): for data parallelism, one per tensor-parallel rank
    (a ring leaves the node once per group); for the pipeline's sends, every rank of a
    stage whose next stage is on another node. Each flow keeps to one NIC (rail-aligned,
    round-robin), so a NIC carries ceil(flows / NICs) of them, sharing it equally; with a
    NIC per GPU nothing is shared."""
    flows = min(dev.gpus_per_node, lay.stride(dim))
    return dev.nic_Bps / math.ceil(flows / dev.nics_per_node)


def link_Bps(lay: Layout, dev: Device, dim: str) -> float:
    """What one flow of ``dim``'s (tp, dp or pp) traffic gets: the intra-node link when every
    group of ``dim`` fits in a node, else its share of a NIC."""
    return dev.intra_Bps if lay.within_node(dim, dev.gpus_per_node) else nic_flow_Bps(lay, dev, dim)


def zero_micro_batch_s(model: Transformer, lay: Layout, dev: Device) -> tuple[float, float]:
    """Per chunk and micro-batch: ZeRO-3's all-gather of the chunk's weights (before its
    forward, and again before its backward), and ZeRO-2/3's reduce-scatter of its gradients
    after the backward: (d − 1)/d · bytes each (DeepSpeed runs them every micro-batch)."""
    d = lay.dp
    if d == 1 or lay.zero < 2:
        return 0.0, 0.0
    one = (d - 1) / d * 2 * stage_params(model, lay) / lay.v / link_Bps(lay, dev, "dp")
    return (one if lay.zero == 3 else 0.0), one


def send_s(model: Transformer, lay: Layout, dev: Device) -> float:
    if lay.pp == 1:
        return 0.0
    across = not lay.within_node("pp", dev.gpus_per_node)  # (one crossing boundary sets the pace)
    return ACT_B * lay.mb * model.seq * model.hidden / (lay.tp if across else 1) / link_Bps(lay, dev, "pp")


def dp_s(model: Transformer, lay: Layout, dev: Device, params: float) -> float:
    """After the flush: the gradients' all-reduce (ZeRO-1: reduce-scatter + all-gather, the
    same volume), 2(d − 1)/d · bytes; ZeRO-2 only the all-gather of the updated weights (its
    reduce-scatters ran every micro-batch); ZeRO-3 nothing (``zero_micro_batch_s``)."""
    d = lay.dp
    if d == 1 or lay.zero == 3:
        return 0.0
    return (1 if lay.zero == 2 else 2) * (d - 1) / d * 2 * params / link_Bps(lay, dev, "dp")


def after_flush_s(model: Transformer, lay: Layout, dev: Device) -> tuple[float, float]:
    """(the data-parallel traffic after the pipeline flush, Adam's update of the device's
    parameters, or of its ZeRO shard of them, at the HBM bandwidth)."""
    params = stage_params(model, lay)
    adam = params / (lay.dp if lay.zero >= 1 else 1) * ADAM_BYTES_PER_PARAM / dev.hbm_Bps
    return dp_s(model, lay, dev, params), adam


def closed_step_s(model: Transformer, lay: Layout, dev: Device) -> tuple[float, Memory]:
    """The step without simulating the pipeline, for pruning a search: the busiest device's
    work m times, plus (p − 1)/v of it for the fill and drain (exact for uniform stages and
    free sends: ``tests/test_llm.py``), plus the sends on the fill and drain path."""
    fwd, bwd, _ = stage_times(model, lay, dev)
    p, v = lay.pp, lay.v
    work = max(sum(fwd[g] + bwd[g] for g in range(d, p * v, p)) for d in range(p))
    pipe = (lay.micro_batches + (p - 1) / v) * work + 2 * (p - 1) * send_s(model, lay, dev)
    grads, adam = after_flush_s(model, lay, dev)
    return pipe + grads + adam, memory(model, lay)


def predict_step(model: Transformer, lay: Layout, dev: Device, block: BlockTimes | None = None) -> StepPrediction:
    """``block``: a measured block's times instead of the roofline's."""
    lay.check(model)
    fwd, bwd, parts = stage_times(model, lay, dev, block)
    run: PipelineRun = simulate(lay.pp, lay.micro_batches, lay.schedule, fwd, bwd, send_s(model, lay, dev), lay.v)
    mem = memory(model, lay)
    grads, adam = after_flush_s(model, lay, dev)
    step = run.makespan_s + grads + adam
    m = lay.micro_batches
    parts = {"compute": parts["compute"] * m, "tensor-parallel": parts["tensor-parallel"] * m,
             "pipeline bubble and sends": run.makespan_s - max(run.busy_s),
             "data-parallel": parts["data-parallel"] * m + grads, "optimizer": adam}
    n, peak = lay.gpus, dev.peak(lay.precision)
    return StepPrediction(
        step_s=step, tokens_per_s=lay.batch * model.seq / step,
        achieved_flops_per_gpu=model.step_flops(lay.batch, lay.recompute == "full") / step / n,
        mfu=model.step_flops(lay.batch, False) / step / n / peak, bubble=run.bubble(),
        parts_s=parts, memory=mem, fits=mem.fits(dev.hbm_bytes))
