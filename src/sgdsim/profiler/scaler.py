"""float16 autocast's loss scaling, as ``torch.amp.GradScaler`` runs it, with its unscale
split by layer for the profiler's per-layer update times.

float16 keeps 5 exponent bits: gradients below about 6e-8 underflow to zero, so torch.amp
trains float16 with a gradient scaler. The loss is multiplied by a scale before the backward
pass; before the update every gradient is divided by it and checked for inf and NaN; a step
that found one skips its update and halves the scale, and 2,000 clean steps double it.
bfloat16 has float32's exponent range and trains without a scaler. The calls here are
GradScaler's own aten calls with its default settings, so the step does a user's work; what
differs is only that the unscale runs layer by layer (one ``foreach`` call per layer instead
of one for the model), so each layer's update can be timed with its share.
"""
from __future__ import annotations

import torch

# torch.amp.GradScaler's defaults
INIT_SCALE, GROWTH_FACTOR, BACKOFF_FACTOR, GROWTH_INTERVAL = 2.0 ** 16, 2.0, 0.5, 2000

class LossScale:
    """One step: ``scaled(loss)`` before backward; ``unscale(grads)`` on every gradient
    (any grouping); ``overflowed()`` says whether the update must be skipped; ``update()``."""

    def __init__(self, device) -> None:
        self.scale = torch.full((), INIT_SCALE, dtype=torch.float32, device=device)
        self.growth_tracker = torch.zeros((), dtype=torch.int32, device=device)
        self.found_inf = torch.zeros((), dtype=torch.float32, device=device)
        self.inv_scale = self.scale.double().reciprocal().float()

    def scaled(self, loss):
        self.inv_scale = self.scale.double().reciprocal().float()  # as GradScaler.unscale_
        return loss * self.scale.to(loss.dtype)

    def unscale(self, grads: list) -> None:
        if grads:
            torch._amp_foreach_non_finite_check_and_unscale_(grads, self.found_inf, self.inv_scale)

    def overflowed(self) -> bool:
        return bool(self.found_inf.item())

    def update(self) -> None:
        torch._amp_update_scale_(self.scale, self.growth_tracker, self.found_inf,
                                 GROWTH_FACTOR, BACKOFF_FACTOR, GROWTH_INTERVAL)
        self.found_inf.zero_()
