"""What a stand-in worker (``incumbent.py alternate``) does between a pull and its push
(docs/validation/regimes/, finding 13): wait with idle cores, keep a core busy for a fixed
time, do a fixed amount of CPU work (which contention stretches), or run one real training
step of a lab model."""
import time

from sgdsim.errors import ConfigError


def pause_of(spec: str):
    """A stand-in for compute between a pull and its push, from ``spec``: ``sleep:S``,
    ``burn:S``, ``work:S`` or ``step:MODEL:BATCH`` (the module's docstring); ConfigError else."""
    how, _, secs = spec.partition(":")
    if how == "step":  # step:MODEL:BATCH, e.g. step:lab:cnn-10mb:128: one real training step
        return _training_step(*secs.rsplit(":", 1))
    if how not in ("sleep", "burn", "work") or not secs.replace(".", "", 1).isdigit():
        raise ConfigError(f"the pause must be sleep:S, burn:S, work:S or step:MODEL:BATCH, got {spec!r}")
    s = float(secs)
    if how == "sleep":
        return lambda: time.sleep(s)
    if how == "work":  # a fixed amount of CPU work, S seconds of it alone: contention stretches it
        n = _loops_per_second() * s
        return lambda: _spin(int(n))

    def burn():
        end = time.perf_counter() + s
        while time.perf_counter() < end:
            pass
    return burn


def _spin(n: int) -> None:
    x = 0
    for i in range(n):
        x += i


def _loops_per_second() -> float:
    t = time.perf_counter()
    _spin(2_000_000)
    return 2_000_000 / (time.perf_counter() - t)


def _training_step(model: str, batch: str):
    """The forward and backward of one step of a lab model, on one thread as the workers run."""
    import torch
    from sgdsim.lab.train.models import load_workload
    torch.set_num_threads(1)
    work, step = load_workload(model, int(batch)), [0]

    def run():
        work.model.zero_grad(set_to_none=True)
        work.loss(step[0]).backward()
        step[0] += 1
    return run
