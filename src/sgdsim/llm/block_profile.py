"""A measured transformer block (issue 37; vTrain's method): one tensor-parallel shard of one
block, timed forward and backward on the device at hand, replaces the roofline's block times
in ``predict``. The logits, the optimizer and every collective stay modelled.

``sgdsim profile gpt:... --layout tp=8,mb=1 -o block.json`` writes one (``torch_block.py``
runs it); ``sgdsim predict gpt:... --block-profile block.json`` reads it, refusing one measured
for another shape, micro-batch, tensor-parallel size or precision.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields

from ..errors import ConfigError
from .layout import Layout, _value
from .model import Transformer

KIND = "sgdsim-llm-block"
SHAPE = ("layers", "hidden", "heads", "seq", "vocab", "kv_heads", "ffn", "glu")
BLOCK_KEYS = ("tp", "mb", "precision")  # what a block's time depends on, of the layout


@dataclass(frozen=True)
class BlockTimes:
    """Median seconds of one micro-batch through one block shard: ``forward_s`` (with autograd
    recording, as in training), ``backward_s``, and ``core_forward_s`` (the attention core,
    which selective recomputation redoes). ``spread``: (p90 − p10) / median of forward +
    backward over the measured repetitions."""

    model: dict
    tp: int
    mb: int
    precision: str
    device: str
    forward_s: float
    backward_s: float
    core_forward_s: float
    repeats: int
    spread: float
    kind: str = KIND

    def matches(self, model: Transformer, layout: Layout) -> None:
        """One line naming the first difference between what was measured and what is asked."""
        shape = {k: getattr(model, k) for k in SHAPE if k != "layers"}
        for key, want in list(shape.items()) + [(k, getattr(layout, k)) for k in ("tp", "mb", "precision")]:
            have = self.model.get(key) if key in shape else getattr(self, key)
            if have != want:
                raise ConfigError(f"the block profile was measured with {key}={have}, not {key}={want}: "
                                  f"profile the block again with this model and layout")


def block_fields(text: str | None) -> dict:
    """``--layout`` of ``sgdsim profile gpt:...``: only what a block's time depends on."""
    values = {"tp": 1, "mb": 1, "precision": "bf16"}
    for item in filter(None, (text or "").split(",")):
        key, eq, value = item.strip().partition("=")
        if not eq or key not in BLOCK_KEYS:
            raise ConfigError(f"--layout: {item!r}: profiling a block takes {', '.join(k + '=' for k in BLOCK_KEYS)} "
                              "only (the rest of a layout is predict's)")
        values[key] = _value(key, value)
        if key in ("tp", "mb") and values[key] < 1:
            raise ConfigError(f"--layout {key} must be a positive integer, got {values[key]}")
    return values


def save_block(times: BlockTimes, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(asdict(times), f, indent=2)
        f.write("\n")


def load_block(path: str) -> BlockTimes:
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: not a readable block profile ({e})") from None
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise ConfigError(f"{path}: not a block profile (write one with: sgdsim profile gpt:... "
                          f"--layout tp=..,mb=.. -o {os.path.basename(path)})")
    names = [f.name for f in fields(BlockTimes)]
    missing = [n for n in names if n not in raw]
    if missing or not isinstance(raw["model"], dict):
        raise ConfigError(f"{path}: a block profile without {', '.join(missing) or 'a model table'}")
    times = BlockTimes(**{n: raw[n] for n in names})
    seconds = (times.forward_s, times.backward_s, times.core_forward_s)
    if not all(isinstance(t, (int, float)) and t > 0 for t in seconds) or times.core_forward_s > times.forward_s:
        raise ConfigError(f"{path}: its seconds must be positive, the attention core's within the forward's")
    return times
