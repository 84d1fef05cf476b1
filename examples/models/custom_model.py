"""A custom model for ``sgdsim profile``: the protocol by example.

    sgdsim profile examples/models/custom_model.py:build --batch-size 32 -o custom.json
    sgdsim profile mypackage.models:build --batch-size 32 -o custom.json   # importable module

The function (any name) returns ``(model, example_batch, loss_fn)``:

* ``model``: a ``torch.nn.Module``; it is trained (train mode, plain SGD) during profiling.
* ``example_batch``: a pair ``(inputs, target)``. ``inputs`` is passed as
  ``model(**inputs)`` if it is a dict, ``model(*inputs)`` if a tuple or list, else
  ``model(inputs)``. ``target`` (anything, e.g. a tensor of labels, or None) goes to the loss.
* ``loss_fn(output, target)``: returns a scalar tensor; one step is
  ``loss_fn(model(inputs), target).backward()`` followed by the SGD update.

If the function takes a ``batch_size`` argument it is called with ``--batch-size``; otherwise
it is called without arguments and every tensor whose first dimension equals the example's
batch size is repeated (or cut) along that dimension to ``--batch-size`` examples.

sgdsim moves the model and the batch to ``--device``. A layer of the profile is a module that
owns parameters itself or has no children (``Gate`` below is one layer, its ``proj`` included);
a module called twice per step gives two layers (``act`` and ``act#2``).
"""
import torch
from torch import nn
from torch.nn import functional as F


class Gate(nn.Module):
    """Owns a parameter directly (``scale``), so it is profiled as one layer with ``proj``."""

    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.sigmoid(self.proj(x)) * self.scale


class TwoTower(nn.Module):
    """Two branches over the same input, joined by concatenation: a DAG, not a chain."""

    def __init__(self, features=64, width=128, classes=10):
        super().__init__()
        self.left = nn.Linear(features, width)
        self.right = nn.Linear(features, width)
        self.act = nn.GELU()  # called twice: layers "act" and "act#2"
        self.gate = Gate(2 * width)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        joined = torch.cat([self.act(self.left(x)), self.act(self.right(x))], dim=1)
        return self.head(self.gate(joined))


def loss_fn(output, target):
    return F.cross_entropy(output, target)


def build(batch_size=32):
    model = TwoTower()
    inputs = torch.randn(batch_size, 64)
    target = torch.randint(10, (batch_size,))
    return model, (inputs, target), loss_fn


def build_fixed():
    """No ``batch_size`` argument: the 8-example batch is resized to --batch-size."""
    return TwoTower(), (torch.randn(8, 64), torch.randint(10, (8,))), nn.CrossEntropyLoss()
