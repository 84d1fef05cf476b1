"""Per-layer inputs of the KDD'15 model, from the bundled PipeDream layer profiles.

The model (KDD'15 §4) needs, per layer l and per training sample:

- ``neurons`` N_neuron(l): output activations (PipeDream's ``activation_bytes`` / 4 / batch);
- ``connections`` W(l): multiply-adds of the forward pass. A fully connected layer has one per
  weight; a convolution one per weight and output position (weights × N_neuron / out
  channels, the channels parsed from the layer's description); other layers none;
- ``weight_bytes``: the parameters a replica reads from the parameter servers (Eqs. 10-11);
- ``local``: whether a neuron's inputs are a local window of the previous layer (convolution,
  pooling: stripe partitions exchange little) or all of it (fully connected).

PipeDream lists the nodes of a DAG in topological order; the model sees a chain. Layers
without multiply-adds (ReLU, batch norm, pooling, additions) are merged into the compute
layer before them: their activations cost C_act each, their parameters are read with it, and
the merged layer's output is the last one's. Data loading (the ``Input`` node) is left out.
"""
from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass
from importlib import resources

from ..errors import ConfigError
from ..units import parse_number

BYTES_PER_VALUE = 4  # fp32
MAX_BATCH = 10**9  # samples: the activations per sample are a file's bytes over the batch
MAX_BYTES = 1e15  # a layer's activations or parameters (the profiles' limit too)


@dataclass(frozen=True)
class Layer:
    name: str
    neurons: float  # outputs per sample
    connections: float  # forward multiply-adds per sample
    weight_bytes: float
    local: bool  # a local receptive field (conv, pooling) rather than all inputs (FC)
    extra_activations: float = 0.0  # merged layers' outputs: C_act each, no multiply-adds


def bundled_models() -> list[str]:
    folder = resources.files("sgdsim") / "data" / "pipedream"
    return sorted(p.name.removesuffix(".layers.csv") for p in folder.iterdir()
                  if p.name.endswith(".layers.csv"))


def bundled_batch_size(model: str) -> int | None:
    path = resources.files("sgdsim") / "data" / "pipedream" / "summary_noinput.csv"
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["model"] == model:
                b = float(row["batch_inferred"])
                return int(round(b)) if math.isfinite(b) else None
    return None


def load_layers(model: str, batch_size: int | None = None) -> tuple[list[Layer], int]:
    """A bundled model name (``resnet50``) or a path to a PipeDream ``layers.csv``; returns the
    merged chain and the batch size the activations were measured at."""
    if batch_size is not None:  # a 400-digit batch would overflow float division
        batch_size = parse_number(batch_size, "--batch-size", lo=1, hi=MAX_BATCH, integer=True)
    if os.path.exists(model):
        path, batch = model, batch_size
    elif model in bundled_models():
        path = str(resources.files("sgdsim") / "data" / "pipedream" / f"{model}.layers.csv")
        batch = batch_size if batch_size is not None else bundled_batch_size(model)
    else:
        raise ConfigError(f"unknown model {model!r}: neither a file nor one of {', '.join(bundled_models())}")
    if batch is None or batch < 1:
        raise ConfigError(f"{model}: give --batch-size (the batch its activation sizes were measured at)")
    return merge(read_rows(path), batch), batch


def read_rows(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"{path}: not a UTF-8 CSV file ({e})") from None
    need = {"op", "activation_bytes", "parameter_bytes"}
    if not rows or not need <= set(rows[0]):
        raise ConfigError(f"{path}: expected a PipeDream layers CSV with columns {', '.join(sorted(need))}")
    for i, row in enumerate(rows, start=2):
        for key in ("activation_bytes", "parameter_bytes"):
            parse_number(row[key], f"{path}: line {i}: {key}", lo=0, hi=MAX_BYTES)
    return rows


_CONV = re.compile(r"^Conv\w*\(\s*([0-9]+)\s*,\s*([0-9]+)")  # ASCII: \d takes '١٢' too
_LINEAR = re.compile(r"^Linear\(")


def merge(rows: list[dict], batch: int) -> list[Layer]:
    """The chain of compute layers (convolutions and fully connected layers), each with the
    parameter-free or elementwise layers after it merged in."""
    layers: list[Layer] = []
    for row in rows:
        op = row["op"].strip()
        if op == "Input":
            continue
        neurons = float(row["activation_bytes"]) / BYTES_PER_VALUE / batch
        weights = float(row["parameter_bytes"])
        conv, linear = _CONV.match(op), _LINEAR.match(op)
        if conv or linear or not layers:
            params = weights / BYTES_PER_VALUE
            per_position = params if linear else params * neurons / _channels(op, conv) if conv else 0.0
            layers.append(Layer(f"{len(layers)}:{op.split('(')[0]}", neurons, per_position, weights,
                                local=not linear))
        else:  # merged into the compute layer before it
            last = layers[-1]
            layers[-1] = Layer(last.name, neurons, last.connections, last.weight_bytes + weights,
                               last.local, last.extra_activations + neurons)
    if not layers:
        raise ConfigError("the layers file has no layers besides the input")
    return layers


def _channels(op: str, conv) -> int:
    """A convolution's output channels (0 counts as 1), bounded before any float division."""
    return max(1, parse_number(conv.group(2), f"layer {op[:40]!r}: output channels", lo=0,
                               hi=MAX_BATCH, integer=True))


def synthetic(sizes: list[tuple[float, float, float, bool]]) -> list[Layer]:
    """Layers from (neurons, connections, weight_bytes, local) tuples (tests, what-ifs)."""
    return [Layer(f"{i}", n, w, b, loc) for i, (n, w, b, loc) in enumerate(sizes)]
