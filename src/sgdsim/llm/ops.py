"""The operations of one transformer block's forward pass (issue 37), in order, each with
its FLOPs and the bytes it moves: what ``step.py`` times and ``sgdsim info gpt:...`` shows.

GEMMs are (m × k) · (k × n), ``count`` of them (one per head for the attention core);
element-wise ops move ``bytes`` (bf16 activations: a norm reads and writes h values per
token, a residual add reads two and writes one, softmax and dropout read and write the score
matrices). With tensor parallelism t, the column- and row-parallel GEMMs, the heads and the
MLP's activations are split t ways (Megatron); norms and residuals are not.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Transformer

ACT_B = 2  # bytes per activation element (bf16/fp16)


@dataclass(frozen=True)
class BlockOp:
    name: str
    m: float = 0.0  # GEMM dimensions; 0 for an element-wise op
    n: float = 0.0
    k: float = 0.0
    count: int = 1
    bytes_moved: float = 0.0  # an element-wise op's traffic
    core: bool = False  # the attention core (selective recomputation redoes it)

    @property
    def gemm(self) -> bool:
        return self.m > 0

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.count

    @property
    def traffic(self) -> float:
        if self.gemm:
            return ACT_B * (self.m * self.k + self.k * self.n + self.m * self.n) * self.count
        return self.bytes_moved


def block_ops(model: Transformer, micro_batch: int, tp: int) -> list[BlockOp]:
    h, s, d, t = model.hidden, model.seq, model.head_dim, tp
    tokens = micro_batch * s
    kv = model.kv_heads * d
    heads = micro_batch * model.heads // t
    scores = s * s * heads
    up = model.ffn * (2 if model.glu else 1) / t

    def memory(name: str, per_token: float, core: bool = False) -> BlockOp:
        return BlockOp(name, bytes_moved=ACT_B * tokens * per_token, core=core)

    return [
        memory("input norm", 2 * h),
        BlockOp("QKV projection", tokens, (h + 2 * kv) / t, h),
        BlockOp("attention scores Q·Kᵀ", s, s, d, heads, core=True),
        BlockOp("softmax", bytes_moved=ACT_B * 2 * scores, core=True),
        BlockOp("attention dropout", bytes_moved=ACT_B * 2 * scores, core=True),
        BlockOp("attention context scores·V", s, d, s, heads, core=True),
        BlockOp("output projection", tokens, h, h / t),
        memory("bias and dropout", 2 * h),
        memory("residual add", 3 * h),
        memory("post-attention norm", 2 * h),
        BlockOp("MLP up" + (" and gate" if model.glu else ""), tokens, up, h),
        memory("SwiGLU" if model.glu else "GeLU", 3 * model.ffn / t),
        BlockOp("MLP down", tokens, h, model.ffn / t),
        memory("bias and dropout", 2 * h),
        memory("residual add", 3 * h),
    ]


def output_ops(model: Transformer, micro_batch: int, tp: int) -> list[BlockOp]:
    """The last stage's extra forward work: the logits GEMM (vocabulary split tp ways) and the
    softmax cross-entropy over them, in fp32 (4 bytes read, written and read back per logit)."""
    tokens = micro_batch * model.seq
    return [BlockOp("output layer (logits)", tokens, model.vocab / tp, model.hidden),
            BlockOp("softmax cross-entropy", bytes_moved=3 * 4 * tokens * model.vocab / tp)]
