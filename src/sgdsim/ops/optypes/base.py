"""What an operator type is: how to read its parameters from a call, and how to build a call
from parameters (for the sampled grid that trains the estimator)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..template import Call, TSpec

Params = dict[str, int | float | str]


@dataclass(frozen=True)
class OpType:
    name: str
    funcs: tuple[str, ...]  # the calls it reads ("aten.convolution.default", ...)
    shape_dims: frozenset[str]  # parameters that are tensor dimensions (linear or null, §3.2.2)
    params_of: Callable[[Call], Params | None]  # None: another type's call after all
    build: Callable[[Params, str], Call]  # parameters, dtype -> a call to time
    sample: Callable[[np.random.Generator], Params]  # one point of the measurement grid
    doc: str = ""
    # the terms of a physical prior (parameters, dtype, cache bytes -> one number per term,
    # each given its own rate by the estimator: ``estimator/terms.py``); None: the roofline
    prior_terms: Callable[[Params, str, float], list[float]] | None = None
    # the backward's own terms, as many (default: the forward's, each at a backward rate)
    backward_terms: Callable[[Params, str, float], list[float]] | None = None
    # terms for both directions when the training rows leave a row's every term without the
    # support a rate needs (a path of the type that a small grid hardly draws): one set for
    # all rows instead (``estimator/terms.fit_terms_prior``)
    merged_terms: Callable[[Params, str, float], list[float]] | None = None
    # rows a term's rate needs, where not ``estimator/terms.MIN_SUPPORT``
    min_support: int | None = None
    # parameters read since rows were first stored, each with the value every older row had
    # (``complete``): a database or a file from before still loads, trains and looks up
    added: tuple[tuple[str, int | float | str], ...] = ()
    # the terms' definition, raised when it changes at the same count of terms: rates fitted to
    # the old one would be applied to other quantities without a word (a trained estimator
    # records it, ``estimator/terms.py``, and is refused until trained again)
    terms_revision: int = 1

    def complete(self, params: Params) -> Params:
        """``params`` with the parameters it was stored without, at their older value."""
        missing = [(k, v) for k, v in self.added if k not in params]
        return {**params, **dict(missing)} if missing else params

    def rates(self) -> int:
        """How many rates its estimator fits from the grid's rows: one per term of its
        physical prior, 0 for a type without terms (its network is searched instead)."""
        if self.prior_terms is None:
            return 0
        return len(self.prior_terms(self.sample(np.random.default_rng(0)), "float32", 2.0 ** 20))

    def required(self) -> frozenset[str]:
        """The parameters every row of this type has: those of a grid point (a type with no
        grid, ``other``, requires none)."""
        try:
            return frozenset(self.sample(np.random.default_rng(0)))
        except ValueError:  # no grid
            return frozenset()


ITEM_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4,
              "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def item_bytes(dtype: str) -> int:
    """Bytes of one element of ``dtype`` (4 for a type this table does not know)."""
    return ITEM_BYTES.get(dtype, 4)


def beyond_cache(numel: float, tensors: int, dtype: str, cache_bytes: float) -> float:
    """The elements of a call over ``tensors`` same-sized tensors (inputs and output) whose
    bytes do not fit in ``cache_bytes``: a prior term (``OpType.prior_terms``)."""
    return max(0.0, numel - cache_bytes / (tensors * item_bytes(dtype)))


def window_out(size: int, kernel: int, stride: int, pad: int) -> int:
    """Positions of a sliding window (a convolution's or a pooling's) along one dimension."""
    return (size + 2 * pad - kernel) // stride + 1


def log_int(rng: np.random.Generator, low: int, high: int) -> int:
    """Log-uniform integer in [low, high]: shapes spread over orders of magnitude."""
    return int(round(float(np.exp(rng.uniform(np.log(low), np.log(high))))))


def aligned_int(rng: np.random.Generator, low: int, high: int, multiple: int = 16,
                odd: float = 0.2) -> int:
    """Log-uniform in [low, high], rounded to a multiple of ``multiple`` but for a share
    ``odd`` of draws: models' widths are multiples of 16 (channels, hidden sizes, heads' dims),
    which the BLAS and oneDNN kernels run faster than the odd sizes a plain log-uniform draw
    gives mostly. Values below ``multiple`` stay as drawn (a batch of 2, a bias of 10)."""
    v = log_int(rng, low, high)
    if v < multiple or rng.random() < odd:
        return v
    return min(high, multiple * round(v / multiple))


# the parameters that say whether an input needs a gradient (``grad(p[...])``): a call with
# none has no backward, by autograd's construction, whatever else its rows share
GRAD_FLAGS = ("gi", "ga", "gb", "gw")


def grad(flag) -> bool:
    return bool(int(flag))


def dense(shape, requires_grad=False, dtype="float32") -> TSpec:
    return TSpec.dense(tuple(int(d) for d in shape), dtype, requires_grad)


def transposed(shape, requires_grad=False, dtype="float32") -> TSpec:
    """A 2-D transposed view (``w.t()``), as ``F.linear`` passes its weight to addmm."""
    rows, cols = (int(d) for d in shape)
    return TSpec((rows, cols), (1, rows), dtype, requires_grad)


def is_transposed(t: TSpec) -> int:
    return int(len(t.shape) == 2 and t.stride == (1, t.shape[0]) and t.shape[1] > 1)


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def rows_cols(t: TSpec) -> tuple[int, int]:
    """(product of all but the last dimension, last dimension)."""
    return numel(t.shape[:-1]), int(t.shape[-1]) if t.shape else 1


def capped(rng, draw, cost, limit, tries=50):
    """Draw parameters until ``cost(params) <= limit``: keeps every grid point quick to time."""
    for _ in range(tries):
        p = draw(rng)
        if cost(p) <= limit:
            return p
    return p


VECTOR_BYTES = 64  # one AVX-512 register, one cache line: a row shorter fills no vector


def rowwise_terms(p, dtype: str, cache_bytes: float) -> list[float]:
    """A row-wise reduction's time (softmax, log-softmax, layer norm: statistics of each
    row, then each element rescaled), one term per rate: a fixed cost, autograd's
    bookkeeping, a cost per row (each row's statistics start again: a short row pays it for
    few elements), one per element, and the elements whose bytes (input and output) do not
    fit in ``cache_bytes``. A row shorter than one vector (``VECTOR_BYTES``) takes a scalar
    path, about 9x slower a row on the grid's Xeon (14 columns against 30): its rows and
    elements again, at their own rates."""
    rows, n = float(p["rows"]), float(p["rows"]) * float(p["cols"])
    short = float(p["cols"] * item_bytes(dtype) < VECTOR_BYTES)
    return [1.0, float(grad(p["gi"])), rows, n, beyond_cache(n, 2, dtype, cache_bytes),
            rows * short, n * short]
