"""A transformer described by its shape (issue 37): ``gpt:layers=96,hidden=12288,...`` or a
Hugging Face ``config.json``, and the operations of one block with their FLOPs and bytes.

Counts follow Narayanan et al., SC'21 (§5.1: a GPT block is 24·s·h² + 4·s²·h forward FLOPs
per sequence; the logits 2·s·h·V) and extend them to Llama-style blocks (grouped-query
attention: K and V have ``kv_heads`` heads; SwiGLU: three ``hidden × ffn`` matrices; RMSNorm,
no biases). FLOPs are those of matrix multiplications (2 per multiply-add), as papers count.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..errors import ConfigError

GPT_KEYS = ("layers", "hidden", "heads", "seq", "vocab", "kv_heads", "ffn", "glu")
HF_FIELDS = {"num_hidden_layers": "layers", "hidden_size": "hidden", "num_attention_heads": "heads",
             "num_key_value_heads": "kv_heads", "intermediate_size": "ffn", "vocab_size": "vocab",
             "max_position_embeddings": "seq"}
HF_ALIASES = {"n_layer": "layers", "n_embd": "hidden", "n_head": "heads", "n_inner": "ffn",  # GPT-2
              "n_positions": "seq", "num_kv_heads": "kv_heads"}  # (Falcon)
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
LLAMA_TYPES = ("llama", "mistral", "qwen2", "gemma")  # SwiGLU, RMSNorm, no biases, untied output
# beyond these a shape describes no trainable model (the largest published are ~1/10 of each)
LIMITS = {"layers": 10_000, "hidden": 1_000_000, "heads": 100_000, "seq": 10_000_000,
          "vocab": 100_000_000, "kv_heads": 100_000, "ffn": 10_000_000}


@dataclass(frozen=True)
class Transformer:
    """A decoder-only transformer. ``ffn`` 0: 4·hidden; ``kv_heads`` 0: ``heads``; ``glu``:
    SwiGLU (Llama) instead of GeLU (GPT), with RMSNorm, no biases and an untied output layer."""

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    kv_heads: int = 0
    ffn: int = 0
    glu: bool = False
    name: str = "gpt"

    def __post_init__(self):
        for key, top in LIMITS.items():
            value, least = getattr(self, key), 0 if key in ("kv_heads", "ffn") else 1
            if not least <= value <= top:
                raise ConfigError(f"{self.name}: {key} must be an integer from {least} to {top:,}, got {value}")
        if self.hidden % self.heads:
            raise ConfigError(f"{self.name}: hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.kv_heads < 0 or self.heads % (self.kv_heads or self.heads):
            raise ConfigError(f"{self.name}: heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        object.__setattr__(self, "kv_heads", self.kv_heads or self.heads)
        object.__setattr__(self, "ffn", self.ffn or 4 * self.hidden)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def layer_params(self) -> int:
        """Parameters of one block (SC'21: 12·h² + 13·h for GPT)."""
        h, kv = self.hidden, self.kv_heads * self.head_dim
        attn = 2 * h * h + 2 * h * kv
        mlp = (3 if self.glu else 2) * h * self.ffn
        if self.glu:  # no biases; two RMSNorm scales
            return attn + mlp + 2 * h
        return attn + mlp + (h + 2 * kv + h) + (self.ffn + h) + 4 * h  # biases, two LayerNorms

    def embedding_params(self) -> int:
        """Token embeddings, learned positions (GPT), the final norm, and an untied output layer."""
        h = self.hidden
        pos = 0 if self.glu else self.seq * h
        out = self.vocab * h if self.glu else 0
        return self.vocab * h + pos + (h if self.glu else 2 * h) + out

    def params(self) -> int:
        return self.layers * self.layer_params() + self.embedding_params()

    def layer_flops(self, tokens: int) -> float:
        """Forward FLOPs of one block for ``tokens`` = b·s tokens (sequences of ``seq``)."""
        h, s, kv = self.hidden, self.seq, self.kv_heads * self.head_dim
        gemms = 2 * tokens * (2 * h * h + 2 * h * kv + (3 if self.glu else 2) * h * self.ffn)
        return gemms + 4 * tokens * s * h  # Q·Kᵀ and scores·V: 2·s²·h each per sequence

    def logits_flops(self, tokens: int) -> float:
        return 2.0 * tokens * self.hidden * self.vocab

    def step_flops(self, sequences: int, recompute: bool) -> float:
        """FLOPs of one training step of ``sequences``: forward, backward (twice the forward)
        and, with full recomputation, the blocks' forward again. With recomputation this is
        SC'21's 96·B·s·l·h²·(1 + s/6h + V/16lh) for GPT blocks."""
        tokens = sequences * self.seq
        blocks = self.layers * self.layer_flops(tokens)
        return (4 if recompute else 3) * blocks + 3 * self.logits_flops(tokens)


def parse_gpt(text: str) -> Transformer:
    """``gpt:layers=96,hidden=12288,heads=96,seq=2048,vocab=51200`` (``llama:`` sets ``glu``)."""
    kind, _, body = text.partition(":")
    if kind not in ("gpt", "llama"):
        raise ConfigError(f"a model description starts with gpt: or llama:, got {text!r}")
    values: dict = {"glu": kind == "llama", "name": kind}
    for item in filter(None, body.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in GPT_KEYS:
            raise ConfigError(f"{kind}: {item!r} is not one of {', '.join(k + '=' for k in GPT_KEYS)}")
        values[key] = _value(kind, key, value)
    missing = [k for k in ("layers", "hidden", "heads", "seq", "vocab") if k not in values]
    if missing:
        raise ConfigError(f"{kind}: give {', '.join(k + '=' for k in missing)} (e.g. gpt:layers=24,"
                          "hidden=2304,heads=24,seq=2048,vocab=51200)")
    return Transformer(**values)


def _value(kind: str, key: str, value: str):
    if key == "glu":
        if value not in ("0", "1", "true", "false"):
            raise ConfigError(f"{kind}: glu must be 0 or 1, got {value!r}")
        return value in ("1", "true")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{kind}: {key} must be an integer, got {value!r}") from None


def load_hf_config(path: str | os.PathLike, seq: int | None = None) -> Transformer:
    """A Hugging Face ``config.json`` (read as JSON; no download). ``seq``: the training
    sequence length (default: ``max_position_embeddings``)."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it ({e.strerror})") from None
    except ValueError as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: a config.json holds one JSON object")
    moe = [k for k in MOE_KEYS if cfg.get(k)]
    if moe:
        raise ConfigError(f"{path}: a mixture-of-experts model ({moe[0]}={cfg[moe[0]]}); sgdsim models "
                          "dense transformers only")
    values = {field: cfg[key] for key, field in {**HF_ALIASES, **HF_FIELDS}.items()
              if isinstance(cfg.get(key), int) and cfg[key] > 0}
    if seq is not None:
        values["seq"] = seq
    missing = [k for k in HF_FIELDS if HF_FIELDS[k] not in values and HF_FIELDS[k] not in ("kv_heads", "ffn")]
    if missing:
        raise ConfigError(f"{path}: missing integer field(s) {', '.join(missing)}")
    glu = cfg.get("model_type") in LLAMA_TYPES or cfg.get("hidden_act") == "silu"
    return Transformer(**values, glu=glu, name=str(cfg.get("model_type") or os.path.basename(str(path))))


def is_description(text: str | None) -> bool:
    """A transformer description rather than a profile: ``gpt:``/``llama:`` or a config.json."""
    return bool(text) and (text.startswith(("gpt:", "llama:")) or os.path.basename(text) == "config.json")


def load_transformer(text: str, seq: int | None = None) -> Transformer:
    if text.startswith(("gpt:", "llama:")):
        model = parse_gpt(text)
        return model if seq is None else Transformer(**{**model.__dict__, "seq": seq})
    return load_hf_config(text, seq)
