"""``Ensemble``: the median of several trainings of one type's rows.

One training picks a principal component and a network among candidates whose validation
errors are a few points apart on 20 validation rows, and the pick decides shapes the grid never
held: four trainings of the same 100 conv2d rows put ResNet-50's convolutions at 14.5-47.3 %
forward median error (docs/ops-runs.md, run 7). Members trained on other validation splits, with
a share of the budget each, keep the spread of one pick out of the answer: their median, so
that one member far off beyond the grid is outvoted. A member is a plain ``OpEstimator``; the
ensemble travels as their JSON in one text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError
from .model import OpEstimator, fitted_alone, train

FORMAT = "sgdsim-op-ensemble/1"
MAX_MEMBERS = 16


@dataclass
class Ensemble:
    members: list[OpEstimator]
    stats: dict = field(default_factory=dict)

    @property
    def op(self) -> str:
        return self.members[0].op

    @property
    def dtype(self) -> str:
        return self.members[0].dtype

    @property
    def layout(self):
        return self.members[0].layout  # the same rows, the same layout

    @property
    def prior(self) -> dict | None:
        """The members' prior where they share one (each is fitted on all the type's rows, so
        with ``--prior on`` they do), so that an estimate can say what it rests on; None where
        they differ or have none."""
        first = self.members[0].prior
        return first if all(m.prior == first for m in self.members[1:]) else None

    def predict(self, params: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """Forward and backward seconds: the members' median (of three, the middle one), not
        their mean: one member far off beyond the grid (an eltwise call of GPT-2's at 7x the
        measured sum) does not move it. A backward every member puts at 0 s (no input needs
        a gradient) stays 0: the members learnt the same rows, so they agree on which are."""
        fwd, bwd = zip(*(m.predict(params) for m in self.members))
        return np.median(fwd, axis=0), np.median(bwd, axis=0)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "members": [json.loads(m.to_json()) for m in self.members],
                           "stats": {k: v for k, v in self.stats.items() if k != "train_s"}},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Ensemble":
        try:
            d = json.loads(text)
            members = [OpEstimator.from_json(json.dumps(m)) for m in d["members"]]
            if not 2 <= len(members) <= MAX_MEMBERS:
                raise ValueError(f"{len(members)} members, expected 2..{MAX_MEMBERS}")
            if len({(m.op, m.dtype) for m in members}) != 1:
                raise ValueError("members of different operator types")
            return cls(members, dict(d["stats"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"not a valid sgdsim operator estimator ensemble: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def estimator_from_json(text: str):
    """An ``OpEstimator`` or an ``Ensemble``, by the format its JSON names."""
    try:
        fmt = json.loads(text).get("format")
    except (ValueError, AttributeError):
        fmt = None
    return Ensemble.from_json(text) if fmt == FORMAT else OpEstimator.from_json(text)


def train_members(records, shape_dims, rng: np.random.Generator, budget_s: float, members: int = 1,
                  **kw):
    """One ``train`` with the whole budget (``members`` 1), or ``members`` trainings with an
    equal share of it, each with its own generator (so its own validation split), as an
    ``Ensemble`` (their median). Its validation error is the members' mean: each member's own
    rows score it, and no row is held out from all of them."""
    if not 1 <= members <= MAX_MEMBERS:
        raise ConfigError(f"members must be in 1..{MAX_MEMBERS}, got {members}")
    if members == 1 or fitted_alone(records[0].op, kw.get("use_prior")):
        return train(records, shape_dims, rng, budget_s, **kw)  # (the terms alone: no draw to vary)
    seeds = rng.integers(2 ** 63 - 1, size=members)
    ests = [train(records, shape_dims, np.random.default_rng(int(s)), budget_s / members, **kw)
            for s in seeds]
    first = ests[0].stats
    return Ensemble(ests, {
        "samples": first["samples"], "set_aside": first["set_aside"],
        "validation_error": float(np.mean([e.stats["validation_error"] for e in ests])),
        "held_out_fwd_median": _mean_of(e.stats.get("held_out_fwd_median") for e in ests),
        "arch": f"{members}x", "pc": ", ".join(sorted({str(e.stats["pc"]) for e in ests})),
        "members": [{k: e.stats[k] for k in ("arch", "pc", "validation_error")} for e in ests],
        "budget_s": budget_s, "budget_hit": any(e.stats["budget_hit"] for e in ests),
        "train_s": sum(e.stats["train_s"] for e in ests)})


def _mean_of(values) -> float | None:
    """The mean of the members' figures that exist (None when none does)."""
    got = [v for v in values if v is not None]
    return float(np.mean(got)) if got else None
