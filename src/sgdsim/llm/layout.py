"""How a large model is laid out on GPUs (issue 37): tensor × pipeline × data parallelism,
micro-batches, the pipeline schedule, recomputation, ZeRO and precision. Parsed at the edge
from ``--layout tp=8,pp=64,dp=6,mb=1,batch=3072``; impossible layouts are refused."""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import ConfigError
from ..spec.limits import MAX_WORKERS
from .model import Transformer

SCHEDULES = ("1f1b", "gpipe", "interleaved")
RECOMPUTE = ("none", "selective", "full")
INT_KEYS = ("tp", "pp", "dp", "mb", "batch", "v", "zero")
MAX_PASSES = 2_000_000  # forward and backward passes the pipeline simulation runs (~3 s)
ORDERS = ("tp-dp-pp", "tp-pp-dp")  # rank order, innermost first (Megatron's default first)
CHOICES = {"schedule": SCHEDULES, "recompute": RECOMPUTE, "precision": ("bf16", "fp16", "fp32", "fp8"),
           "sp": ("0", "1"), "order": ORDERS}


@dataclass(frozen=True)
class Layout:
    """``batch``: sequences per step (global); ``mb``: sequences per micro-batch; ``v``: model
    chunks per device (interleaved 1F1B); ``sp``: sequence parallelism (Megatron's
    reduce-scatter/all-gather instead of all-reduce, activations split by ``tp``); ``zero``:
    0 (none), 1 (optimizer states), 2 (+ gradients), 3 (+ weights: FSDP) sharded over ``dp``.
    ``order``: how ranks are numbered onto nodes, innermost first: tensor parallelism always
    inside a node, then data parallelism (Megatron's default) or pipeline stages."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    mb: int = 1
    batch: int = 0
    schedule: str = "1f1b"
    v: int = 1
    recompute: str = "full"
    zero: int = 0
    sp: bool = False
    precision: str = "bf16"
    order: str = "tp-dp-pp"

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def describe(self, batch: bool = False) -> str:
        """``tp=8 pp=8 dp=16 mb=1 [batch=1536 ]interleaved v=2 recompute=selective[ sp=1] zero=1``, as
        the tables print it (a plan's layouts share one batch: it leaves it out)."""
        sched = self.schedule + (f" v={self.v}" if self.v > 1 else "")
        return (f"tp={self.tp} pp={self.pp} dp={self.dp} mb={self.mb} {f'batch={self.batch} ' if batch else ''}"
                f"{sched} recompute={self.recompute}" + (" sp=1" if self.sp else "")
                + (f" zero={self.zero}" if self.zero else ""))

    def stride(self, dim: str) -> int:
        """How far apart the ranks of one group of ``dim`` (tp, dp or pp) are: the product of
        the dimensions inside it in ``order``."""
        stride = 1
        for d in self.order.split("-"):
            if d == dim:
                return stride
            stride *= getattr(self, d)
        raise ValueError(dim)

    def within_node(self, dim: str, gpus_per_node: int) -> bool:
        """Whether every group of ``dim`` lies inside one node."""
        return self.stride(dim) * getattr(self, dim) <= gpus_per_node

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step (gradient accumulation with ``pp`` = 1)."""
        return self.batch // (self.dp * self.mb)

    def check_values(self) -> None:
        """Each field alone (before any arithmetic on them)."""
        for key in ("tp", "pp", "dp", "mb", "batch", "v"):
            if getattr(self, key) < 1:
                raise ConfigError(f"--layout {key} must be a positive integer, got {getattr(self, key)}")
        if self.zero not in (0, 1, 2, 3):
            raise ConfigError(f"--layout zero must be 0, 1, 2 or 3, got {self.zero}")
        if self.gpus > MAX_WORKERS:
            raise ConfigError(f"tp·pp·dp = {self.gpus:,} GPUs is above the limit of {MAX_WORKERS:,}")

    def check(self, model: Transformer) -> None:
        """One line naming what cannot be, before any work."""
        self.check_values()
        if model.heads % self.tp or model.kv_heads % self.tp:
            raise ConfigError(f"tp={self.tp} does not divide the {model.heads} attention heads "
                              f"({model.kv_heads} key/value heads)")
        if model.layers % (self.pp * self.v):
            raise ConfigError(f"{model.layers} layers are not divisible by pp·v = {self.pp * self.v}")
        if self.batch % (self.dp * self.mb):
            raise ConfigError(f"batch {self.batch} is not divisible by dp·mb = {self.dp * self.mb}")
        if self.v > 1 and self.schedule != "interleaved":
            raise ConfigError("v (model chunks per device) applies to schedule=interleaved")
        if self.schedule == "interleaved" and self.micro_batches % self.pp:
            raise ConfigError(f"the interleaved schedule needs micro-batches ({self.micro_batches}) "
                              f"to be a multiple of pp={self.pp}")
        passes = 2 * self.micro_batches * self.pp * self.v
        if passes > MAX_PASSES:
            raise ConfigError(f"{self.micro_batches:,} micro-batches through {self.pp * self.v} stages are "
                              f"{passes:,} passes to simulate, above the limit of {MAX_PASSES:,}: raise mb or dp")


def layout_fields(text: str) -> dict:
    """The fields ``--layout`` gives (``batch`` required), each parsed and checked alone; ``v``
    above 1 implies the interleaved schedule."""
    values: dict = {}
    known = [f.name for f in fields(Layout)]
    for item in filter(None, (text or "").split(",")):
        key, eq, value = item.strip().partition("=")
        if not eq or key not in known:
            raise ConfigError(f"--layout: {item!r} is not one of {', '.join(k + '=' for k in known)}")
        values[key] = _value(key, value)
    if "batch" not in values:
        raise ConfigError("--layout needs batch= (sequences per step), e.g. tp=8,pp=8,batch=1536")
    Layout(**values).check_values()
    if values.get("v", 1) > 1 and "schedule" not in values:
        values["schedule"] = "interleaved"
    return values


def parse_layout(text: str, workers: int | None = None) -> Layout:
    """``tp=8,pp=64,dp=6,mb=1,batch=3072[,schedule=interleaved,v=2,recompute=selective,zero=1,sp=1]``;
    ``dp`` may be left out when ``workers`` (GPUs) is given."""
    values = layout_fields(text)
    if "dp" not in values and workers:
        tp_pp = values.get("tp", 1) * values.get("pp", 1)
        if workers % tp_pp:
            raise ConfigError(f"{workers} GPUs are not a multiple of tp·pp = {tp_pp}")
        values["dp"] = workers // tp_pp
    layout = Layout(**values)
    if workers and layout.gpus != workers:
        raise ConfigError(f"tp·pp·dp = {layout.gpus} GPUs, but --workers gives {workers}")
    return layout


def _value(key: str, value: str):
    if key in INT_KEYS:
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"--layout: {key} must be an integer, got {value!r}") from None
    if value not in CHOICES[key]:
        raise ConfigError(f"--layout: {key} must be one of {', '.join(CHOICES[key])}, got {value!r}")
    return value == "1" if key == "sp" else value
