"""A model's training step as operator calls grouped into the profiler's layers (meta device).

``trace_model`` runs the step once on the meta device with the profiler's hooks: the layers,
their DAG, the parameter owners and the gradient-ready order are found exactly as
``sgdsim profile`` finds them, and every forward call is recorded. ``layer_times`` replays the
step with per-call durations and returns what the hooks charged to each layer.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from ..errors import ConfigError
from ..profiler.precision import needs_scaler
from .optypes import classify
from .template import Call, TSpec
from .trace import Tracer

UPDATE_FUNC = "aten.add_.Tensor"  # plain SGD: p.add_(grad, alpha=-lr), one call per parameter
# float16's gradient scaler divides each gradient by the loss scale before the update
# (profiler/scaler.py): priced as the in-place multiply it is, one read and one write of the
# gradient; its inf check rides on that pass. On this CPU the amp kernel itself took
# 0.4-2.4x an in-place multiply (1 k-39 M elements; docs/ops.md, "Mixed precision").
UNSCALE_FUNC = "aten.mul_.Scalar"


@dataclass
class TracedStep:
    work: object
    rec: object
    tracer: Tracer
    discovered: tuple  # (owner, unused, ready) as profiler.runner._discover returns
    calls: list[Call]  # forward calls of one step, in order
    where: object = None  # the fake tensors' mode, to enter again for a replay (None: meta)

    def keyed(self) -> list[tuple[str, dict]]:
        return [classify(c) for c in self.calls]

    def update_calls(self) -> dict[int, list[Call]]:
        """Per layer instance: the optimizer's calls on its parameters (after float16's
        unscale of their gradients)."""
        owner = self.discovered[0]
        scaled = needs_scaler(self.work.autocast)
        return {idx: [c for p in ps for c in _update_calls(p, scaled)] for idx, ps in owner.items()}


def _update_calls(param, scaled: bool) -> list[Call]:
    spec = TSpec.dense(tuple(param.shape), str(param.dtype).removeprefix("torch."))
    unscale = [Call(UNSCALE_FUNC, (spec, 2.0 ** -16))] if scaled else []
    return unscale + [Call(UPDATE_FUNC, (spec, spec), (("alpha", -1e-3),))]


def trace_model(spec: str, batch_size: int, autocast: str | None = None,
                device_type: str = "cpu") -> TracedStep:
    """``autocast``: "bfloat16" or "float16", the forward and loss under torch.autocast for
    ``device_type`` (mixed precision): each call in the precision autocast gives it, its casts
    traced as calls. Autocast acts on a device type and the meta device is none it casts for,
    so such a step is traced on fake tensors of that type instead (no data either)."""
    import torch

    from ..profiler.recorder import Recorder, find_layers
    from ..profiler.runner import _discover
    from ..profiler.spec import load_workload

    with torch.device("meta"), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        work = load_workload(spec, batch_size)
    where = _on_fake_tensors(work, device_type) if autocast else None
    work.autocast = autocast
    model = work.model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ConfigError(f"model {work.name} has no trainable parameters: nothing to train")
    rec = Recorder(find_layers(model), params)
    tracer = Tracer(rec)
    rec.clock = tracer.clock
    try:
        with where or nullcontext(), tracer.active():
            discovered = _discover(work, rec, params, tracer.clock)
    except ConfigError:
        raise
    except Exception as exc:  # an operator without a meta kernel, data-dependent shapes...
        on = f"fake {device_type} tensors" if where else "the meta device"
        raise ConfigError(f"model {work.name} cannot be traced on {on}: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    return TracedStep(work, rec, tracer, discovered, list(tracer.calls), where)


def _on_fake_tensors(work, device_type: str):
    """The model built on the meta device, as every trace builds it (its own initialisation
    skips meta tensors; run on fake ones, ViT's truncated normal reads values), then its
    parameters, buffers and batch moved to fake tensors of ``device_type``, shared parameters
    kept shared (GPT-2's head is its embedding); returns their mode."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from ..profiler.spec import map_tensors

    if device_type == "cuda" and not torch.backends.cuda.is_built():
        raise ConfigError(f"autocast on a CUDA device follows CUDA's autocast rules, which this "
                          f"PyTorch build ({torch.__version__}, CPU only) cannot trace: estimate "
                          f"it where PyTorch is built with CUDA (no GPU needed)")
    users: dict[int, list] = {}  # a parameter -> every (module, name) that holds it
    for module in work.model.modules():
        for name, p in module._parameters.items():
            if p is not None:
                users.setdefault(id(p), []).append((module, name))
    mode = FakeTensorMode(allow_non_fake_inputs=True)  # the meta tensors it replaces

    def fake(t):
        return torch.empty_like(t, device=device_type)
    with mode:
        work.model.to_empty(device=device_type)
        work.inputs, work.target = map_tensors(work.inputs, fake), map_tensors(work.target, fake)
    for held in users.values():
        first, name = held[0]
        for module, other in held[1:]:
            module._parameters[other] = first._parameters[name]
    return mode



def layer_times(step: TracedStep, durations: list[float]) -> list[float]:
    """Seconds charged to each layer instance when call i takes ``durations[i]``."""
    from ..profiler.runner import _profiled_step

    step.tracer.replay(durations)
    with step.where or nullcontext(), step.tracer.active():
        _, fwd, _, _ = _profiled_step(step.work, step.rec, (None, None), step.tracer.clock)
    return list(fwd)
