"""Timing a model's step whole beside its calls' sum (``ops measure --model``), the rows a
device's step factor rests on (``step_factor.py``). Apart from ``step_factor.py`` because it
needs the estimator, which needs the factor."""
from __future__ import annotations

from .step_factor import profile_step_s

STEPS, WARMUP = 10, 2  # steps timed after warm-up (the median kept)


def time_step(spec: str, batch_size: int, db, device: str, threads: int, torch_device: str = "cpu",
              tick=None, autocast: str | None = None) -> tuple[float, float]:
    """(the model's plain step timed here, its calls' sum from ``db``'s rows), after its calls
    were measured; the step as an allocator that keeps freed memory runs it, as estimates are;
    under torch.autocast in ``autocast``'s type when given."""
    from ..profiler.api import profile_model
    from .estimate import estimate_profile

    run = profile_model(spec, batch_size, steps=STEPS, warmup=WARMUP, device=torch_device,
                        threads=threads, keep_memory=True, tick=tick, autocast=autocast)
    calls = estimate_profile(spec, batch_size, db, device, step_factor=False, autocast=autocast)
    return run.plain_step_s, profile_step_s(calls)
