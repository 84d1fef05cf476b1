"""Parameter kinds, input encoding and candidate complexity functions (Tianshu §3.2.1-3.2.2).

Pruning rules (Step 1), applied in this order to each parameter of the training rows:

1. a parameter with a single value carries no information: dropped (it must still be given);
2. a string is a *mode* (one-hot input), never a factor of the complexity function;
3. a tensor dimension is *linear* or *null* (exponent 1 or 0), however few values it has:
   the paper's own Eq. 2 has the filter size as a factor, and kernels come in 1, 3, 5, 7 —
   as a mode, an unseen kernel size could not be predicted at all;
4. any other number with at most 5 distinct values (stride, padding, groups, flags) is a mode;
5. any other number may be *linear*, *inversely proportional* or *null* (1, -1 or 0).

Modes: the paper trains one independent model per mode value. With a few hundred rows per
operator type, splitting them 2 x 2 x 3 ways would leave tens of rows per model, so modes are
one-hot inputs of a single MLP instead; the one split kept is the dtype (``train`` takes one
op and dtype: a different dtype is a different kernel, and the database groups by it).

Everything the MLP sees is in log space: a product of powers is then a sum (the PC is a linear
combination of the log inputs) and a squared error in log time is a relative error. A number
that can be 0 (padding) enters as ``log(x + 1)``, and so does its PC factor ``(x + 1)``; one
that can be negative enters as ``sign(x) log(1 + |x|)`` and is never a factor. At prediction,
values below the training minimum are clamped to it: small operators cost their fixed overhead,
which the MLP has seen, while extrapolating log-linearly downwards would predict less than it.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

MODE_MAX_VALUES = 5
LINEAR, INVERSE, NULL = 1, -1, 0


@dataclass(frozen=True)
class Numeric:
    """A numeric input: ``log(x + offset)`` (``offset`` -1: signed log), clamped at ``low``."""

    name: str
    allowed: tuple[int, ...]  # exponents it may take in the complexity function
    offset: int
    low: float  # smallest encoded value seen in training
    high: float = float("inf")  # largest (models stored before it was kept: unknown)


@dataclass(frozen=True)
class Layout:
    """How a parameter dict becomes an input row: fixed at training, stored in the model."""

    numeric: tuple[Numeric, ...]
    modes: tuple[tuple[str, tuple[str, ...]], ...]  # (name, values seen) -> one-hot columns
    constant: tuple[tuple[str, str], ...]  # (name, its one value): required, not an input

    @property
    def names(self) -> set[str]:
        return {n.name for n in self.numeric} | {m for m, _ in self.modes} | \
            {c for c, _ in self.constant}

    @property
    def width(self) -> int:
        return len(self.numeric) + sum(len(v) for _, v in self.modes)

    def to_json(self) -> dict:
        return {"numeric": [[n.name, list(n.allowed), n.offset, n.low,
                             n.high if np.isfinite(n.high) else None]
                            for n in self.numeric],
                "modes": [[m, list(v)] for m, v in self.modes],
                "constant": [list(c) for c in self.constant]}

    @classmethod
    def from_json(cls, d: dict) -> "Layout":
        numeric = tuple(Numeric(str(n[0]), tuple(int(e) for e in n[1]), int(n[2]), float(n[3]),
                                float("inf") if len(n) < 5 or n[4] is None else float(n[4]))
                        for n in d["numeric"])
        modes = tuple((str(m), tuple(str(v) for v in vs)) for m, vs in d["modes"])
        return cls(numeric, modes, tuple((str(c), str(v)) for c, v in d["constant"]))


def layout_of(params: list[dict], shape_dims) -> Layout:
    """Apply the pruning rules to the training rows' parameters."""
    numeric, modes, constant = [], [], []
    for name in sorted({k for p in params for k in p}):
        values = [p[name] for p in params]
        distinct = sorted({str(v) for v in values})
        if len(distinct) == 1:
            constant.append((name, distinct[0]))
        elif any(isinstance(v, str) for v in values):
            modes.append((name, tuple(distinct)))
        elif name in shape_dims:
            numeric.append(_numeric(name, values, (LINEAR, NULL)))
        elif len(distinct) <= MODE_MAX_VALUES:
            modes.append((name, tuple(distinct)))
        else:
            numeric.append(_numeric(name, values, (LINEAR, INVERSE, NULL)))
    return Layout(tuple(numeric), tuple(modes), tuple(constant))


def _numeric(name: str, values, allowed) -> Numeric:
    x = np.asarray(values, dtype=float)
    offset = 0 if x.min() > 0 else 1 if x.min() == 0 else -1
    if offset < 0:
        allowed = (NULL,)  # log of a negative number: no power law to find
    encoded = _encode(x, offset)
    return Numeric(name, allowed, offset, float(encoded.min()), float(encoded.max()))


def _encode(x: np.ndarray, offset: int) -> np.ndarray:
    if offset < 0:
        return np.sign(x) * np.log1p(np.abs(x))
    return np.log(x + offset)


def log_inputs(params: list[dict], layout: Layout) -> np.ndarray:
    """(rows, numeric) encoded numeric parameters, clamped below at the training minimum."""
    cols = []
    for n in layout.numeric:
        x = np.array([float(p[n.name]) for p in params])
        safe = np.maximum(x, -n.offset) if n.offset >= 0 else x  # keep log's argument >= 0
        with np.errstate(divide="ignore"):
            cols.append(np.maximum(_encode(safe, n.offset), n.low))
    return np.stack(cols, axis=1) if cols else np.zeros((len(params), 0))


def bounded_inputs(params: list[dict], layout: Layout) -> np.ndarray:
    """``log_inputs`` clamped above at the training maximum too: a learned correction of the
    roofline prior then holds still outside the grid, and the prior alone carries the scaling
    there (a quadratic in log space would otherwise run away)."""
    logx = log_inputs(params, layout)
    highs = np.array([n.high for n in layout.numeric])
    return np.minimum(logx, highs) if logx.shape[1] else logx  # an unknown (inf) high: no clamp


def pairwise(logx: np.ndarray) -> np.ndarray:
    """Products of every pair of columns, squares included: the quadratic terms."""
    i, j = np.triu_indices(logx.shape[1])
    return logx[:, i] * logx[:, j]


def n_pairwise(n: int) -> int:
    """How many columns ``pairwise`` makes of ``n``."""
    return n * (n + 1) // 2


def one_hot(params: list[dict], layout: Layout) -> np.ndarray:
    """Mode columns; a value unseen in training is all zeros (no mode in particular)."""
    cols = []
    for name, values in layout.modes:
        index = {v: i for i, v in enumerate(values)}
        block = np.zeros((len(params), len(values)))
        for r, p in enumerate(params):
            i = index.get(str(p[name]))
            if i is not None:
                block[r, i] = 1.0
        cols.append(block)
    return np.hstack(cols) if cols else np.zeros((len(params), 0))


def unseen_modes(params: list[dict], layout: Layout) -> list[str]:
    """``name=value`` of mode and constant values the training never saw, and of numbers above
    the largest it saw (predictions there are guesses): for callers that want to warn."""
    seen = {m: set(v) for m, v in layout.modes} | {c: {v} for c, v in layout.constant}
    out = set()
    for p in params:
        out |= {f"{m}={p[m]}" for m, vs in seen.items() if str(p[m]) not in vs}
    for n in layout.numeric:
        if n.offset < 0 or not np.isfinite(n.high):
            continue
        values = np.array([float(p[n.name]) for p in params])
        over = values[_encode(values, n.offset) > n.high + 1e-9]
        if over.size:
            top = round(float(np.exp(n.high)) - n.offset)
            out.add(f"{n.name}={int(over.max()) if over.max().is_integer() else over.max()}"
                    f" (trained up to {top})")
    return sorted(out)


def n_candidates(layout: Layout) -> int:
    """Candidate complexity functions: every exponent combination but the all-null one."""
    return int(np.prod([len(n.allowed) for n in layout.numeric])) - 1


def candidates(layout: Layout):
    for exps in itertools.product(*(n.allowed for n in layout.numeric)):
        if any(exps):
            yield exps


def pc_text(layout: Layout, exps) -> str:
    """``m*k*n`` or ``n*h*w/(sh*sw)``: the complexity function, readable."""
    if not exps:
        return "-"

    def factor(n: Numeric) -> str:
        return f"({n.name}+1)" if n.offset == 1 else n.name

    num = [factor(n) for n, e in zip(layout.numeric, exps) if e == LINEAR]
    den = [factor(n) for n, e in zip(layout.numeric, exps) if e == INVERSE]
    text = "*".join(num) or "1"
    return f"{text}/{den[0]}" if len(den) == 1 else f"{text}/({'*'.join(den)})" if den else text
