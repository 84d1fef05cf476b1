"""Built-in models for ``zoo:NAME[?key=value&...]``: random weights, random data, no network.

The transformers models are built from their configuration classes (never
``from_pretrained``), so nothing is downloaded; HF_HUB_OFFLINE=1 is set anyway. Options after
``?`` are builder arguments (``seq_len``, ``image_size``, ``width``...) or, for transformers
models, fields of the model's config (``zoo:gpt2?n_layer=2&n_embd=64``). Values are parsed as
int, float, true/false or comma lists; anything else stays a string.
"""
from __future__ import annotations

import inspect
import os

import torch
from torch import nn
from torch.nn import functional as F

from ..errors import ConfigError
from .messages import first_line

# ----------------------------------------------------------------------------- small nn models


def mlp(batch_size, width=256, depth=3, inputs=784, classes=10):
    """A chain: Linear-ReLU repeated, then a Linear classifier."""
    layers, d = [], inputs
    for _ in range(depth - 1):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    model = nn.Sequential(*layers, nn.Linear(d, classes))
    return model, (torch.randn(batch_size, inputs), _labels(batch_size, classes)), \
        nn.CrossEntropyLoss()


def small_cnn(batch_size, channels=16, image_size=32, classes=10, inplace=True):
    """Conv-BN-ReLU twice (in-place ReLUs, as torchvision writes them), pool, classifier."""
    c = channels
    model = nn.Sequential(
        nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(inplace=inplace),
        nn.Conv2d(c, 2 * c, 3, padding=1, stride=2), nn.BatchNorm2d(2 * c),
        nn.ReLU(inplace=inplace), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * c, classes))
    return model, (_images(batch_size, image_size), _labels(batch_size, classes)), \
        nn.CrossEntropyLoss()


class BasicBlock(nn.Module):
    """torchvision's ResNet block: the ReLU module is called twice, the add is glue code."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class SmallResNet(nn.Module):
    def __init__(self, channels=16, classes=10):
        super().__init__()
        c = channels
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                                  nn.ReLU(inplace=True))
        self.layers = nn.Sequential(BasicBlock(c, c, 1), BasicBlock(c, 2 * c, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def small_resnet(batch_size, channels=16, image_size=32, classes=10):
    return SmallResNet(channels, classes), \
        (_images(batch_size, image_size), _labels(batch_size, classes)), nn.CrossEntropyLoss()


def _images(batch_size, size):
    return torch.randn(batch_size, 3, size, size)


def _labels(batch_size, classes):
    return torch.randint(classes, (batch_size,))


# ----------------------------------------------------------------------------- transformers


def _transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from configs: nothing to download
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise ConfigError("this zoo model needs transformers: "
                          "pip install 'transformers>=4.40,<5'") from None
    return transformers


def _config(cls_name, fields: dict, **defaults):
    cls = getattr(_transformers(), cls_name)
    reference = cls()
    for key in fields:
        if not hasattr(reference, key):
            raise ConfigError(f"{cls_name} has no field {key!r}")
    return cls(**{**defaults, **fields})


def logits_cross_entropy(output, target):
    return F.cross_entropy(output.logits, target)


def next_token_cross_entropy(output, tokens):
    logits = output.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def resnet50(batch_size, image_size=224, **fields):
    cfg = _config("ResNetConfig", fields, num_labels=1000)
    model = _transformers().ResNetForImageClassification(cfg)
    return model, (_images(batch_size, image_size), _labels(batch_size, cfg.num_labels)), \
        logits_cross_entropy


def vit_base(batch_size, **fields):
    cfg = _config("ViTConfig", fields, num_labels=1000)
    model = _transformers().ViTForImageClassification(cfg)
    return model, (_images(batch_size, cfg.image_size), _labels(batch_size, cfg.num_labels)), \
        logits_cross_entropy


def bert_base(batch_size, seq_len=128, **fields):
    cfg = _config("BertConfig", fields)
    _check_seq(seq_len, cfg.max_position_embeddings, "max_position_embeddings")
    model = _transformers().BertForSequenceClassification(cfg)
    tokens = torch.randint(cfg.vocab_size, (batch_size, seq_len))
    inputs = {"input_ids": tokens, "attention_mask": torch.ones_like(tokens)}
    return model, (inputs, _labels(batch_size, cfg.num_labels)), logits_cross_entropy


def gpt2(batch_size, seq_len=128, **fields):
    cfg = _config("GPT2Config", fields, use_cache=False)
    _check_seq(seq_len, cfg.n_positions, "n_positions")
    model = _transformers().GPT2LMHeadModel(cfg)
    tokens = torch.randint(cfg.vocab_size, (batch_size, seq_len))
    return model, ({"input_ids": tokens}, tokens), next_token_cross_entropy


def _check_seq(seq_len, limit, field):
    if not isinstance(seq_len, int) or not 1 < seq_len <= limit:
        raise ConfigError(f"seq_len must be an integer in 2..{field}={limit}, got {seq_len!r}")


ZOO = {"mlp": mlp, "small-cnn": small_cnn, "small-resnet": small_resnet,
       "resnet50": resnet50, "bert-base": bert_base, "gpt2": gpt2, "vit-base": vit_base}

# ----------------------------------------------------------------------------- spec parsing


def build_zoo(text: str, batch_size: int):
    """``NAME[?key=value&...]`` -> (model, (inputs, target), loss_fn)."""
    name, _, query = text.partition("?")
    builder = ZOO.get(name)
    if builder is None:
        raise ConfigError(f"unknown zoo model {name!r} (known: {', '.join(ZOO)})")
    options = parse_options(query, name)
    params = inspect.signature(builder).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for key in options:
        if key not in params and not open_ended or key == "batch_size":
            known = ", ".join(k for k in params if k != "batch_size")
            raise ConfigError(f"zoo:{name} has no option {key!r} (options: {known})")
    try:
        return builder(batch_size, **options)
    except ConfigError as exc:
        raise ConfigError(f"zoo:{name}: {exc}") from None
    except Exception as exc:  # e.g. a config value the model cannot be built with
        raise ConfigError(f"zoo:{name} cannot be built with {query or 'its defaults'}: "
                          f"{type(exc).__name__}: {first_line(exc)}") from None


def parse_options(query: str, name: str) -> dict:
    options = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"zoo:{name}: option {item!r} is not key=value")
        options[key] = [_value(v) for v in value.split(",")] if "," in value else _value(value)
    return options


def _value(text: str):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)
