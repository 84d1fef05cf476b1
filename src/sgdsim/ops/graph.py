"""A model's training step as operator calls grouped into the profiler's layers (meta device).

``trace_model`` runs the step once on the meta device with the profiler's hooks: the layers,
their DAG, the parameter owners and the gradient-ready order are found exactly as
``sgdsim profile`` finds them, and every forward call is recorded. ``layer_times`` replays the
step with per-call durations and returns what the hooks charged to each layer.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .optypes import classify
from .template import Call, TSpec
from .trace import Tracer

UPDATE_FUNC = "aten.add_.Tensor"  # plain SGD: p.add_(grad, alpha=-lr), one call per parameter


@dataclass
class TracedStep:
    work: object
    rec: object
    tracer: Tracer
    discovered: tuple  # (owner, unused, ready) as profiler.runner._discover returns
    calls: list[Call]  # forward calls of one step, in order

    def keyed(self) -> list[tuple[str, dict]]:
        return [classify(c) for c in self.calls]

    def update_calls(self) -> dict[int, list[Call]]:
        """Per layer instance: the optimizer's calls on its parameters."""
        owner = self.discovered[0]
        return {idx: [_update_call(p) for p in ps] for idx, ps in owner.items()}


def _update_call(param) -> Call:
    spec = TSpec.dense(tuple(param.shape), str(param.dtype).removeprefix("torch."))
    return Call(UPDATE_FUNC, (spec, spec), (("alpha", -1e-3),))


def trace_model(spec: str, batch_size: int) -> TracedStep:
    import torch

    from ..profiler.recorder import Recorder, find_layers
    from ..profiler.runner import _discover
    from ..profiler.spec import load_workload

    with torch.device("meta"), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        work = load_workload(spec, batch_size)
    model = work.model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ConfigError(f"model {work.name} has no trainable parameters: nothing to train")
    rec = Recorder(find_layers(model), params)
    tracer = Tracer(rec)
    rec.clock = tracer.clock
    try:
        with tracer.active():
            discovered = _discover(work, rec, params, tracer.clock)
    except ConfigError:
        raise
    except Exception as exc:  # an operator without a meta kernel, data-dependent shapes...
        raise ConfigError(f"model {work.name} cannot be traced on the meta device: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    return TracedStep(work, rec, tracer, discovered, list(tracer.calls))


def layer_times(step: TracedStep, durations: list[float]) -> list[float]:
    """Seconds charged to each layer instance when call i takes ``durations[i]``."""
    from ..profiler.runner import _profiled_step

    step.tracer.replay(durations)
    with step.tracer.active():
        _, fwd, _, _ = _profiled_step(step.work, step.rec, None, step.tracer.clock)
    return list(fwd)
