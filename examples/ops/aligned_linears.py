"""Linear layers of a transformer's sizes, and the same moved off the multiples of 16: does the
grid's estimator (trained on randomly drawn sizes) tell the two apart? (docs/ops-runs.md,
"The models' aligned matrix products".)

    sgdsim ops measure --model examples/ops/aligned_linears.py:aligned --batch-size 128 --no-step --db lin.sqlite
    sgdsim ops measure --model examples/ops/aligned_linears.py:shifted --batch-size 128 --no-step --db lin.sqlite
    python examples/ops/model_calls.py lin.sqlite grid.sqlite --calls addmm

The batch is the products' m (a transformer's batch x sequence); each layer has its own input,
so every (k, n) below is one addmm forward and its backward.
"""
import torch
from torch import nn

SIZES = [(768, 768), (768, 2304), (768, 3072), (3072, 768), (1024, 4096), (4096, 1024),
         (512, 2048), (2048, 512)]
SHIFT = (5, 3)  # k + 5, n + 3: odd sizes, as a randomly drawn grid mostly has


class Linears(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(k, n) for k, n in sizes)

    def forward(self, *xs):
        return sum(layer(x).mean() for layer, x in zip(self.layers, xs))


def _build(batch_size: int, sizes):
    inputs = tuple(torch.randn(batch_size, k) for k, _ in sizes)
    return Linears(sizes), (inputs, None), lambda out, _target: out


def aligned(batch_size: int):
    return _build(batch_size, SIZES)


def shifted(batch_size: int):
    return _build(batch_size, [(k + SHIFT[0], n + SHIFT[1]) for k, n in SIZES])
