"""``profile_model``: profile one worker of a real PyTorch training job (docs/profiler.md).

torch is imported inside ``profile_model`` only, so that ``import sgdsim.profiler`` (and the
CLI's parser) works without it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..profile.model import Job, Profile
from .precision import check_autocast, needs_scaler

if TYPE_CHECKING:
    from .quality import Quality

NEEDS_TORCH = ("sgdsim profile needs PyTorch: pip install torch==2.13.0 "
               "(then pip install -e '.[torch]')")


@dataclass(frozen=True)
class ProfileRun:
    """The profile and the cost of taking it: median step time with and without hooks."""

    profile: Profile
    profiled_step_s: float
    plain_step_s: float
    quality: Quality | None = None

    @property
    def overhead(self) -> float:
        """Relative slowdown of a profiled step (0.05 = 5 % slower than a plain one)."""
        return self.profiled_step_s / self.plain_step_s - 1.0

    def overhead_line(self) -> str:
        steps = self.profile.n_steps
        return (f"profiling overhead: median step {self.profiled_step_s * 1e3:.2f} ms with hooks "
                f"vs {self.plain_step_s * 1e3:.2f} ms without ({self.overhead:+.1%}; "
                f"{steps} steps each, interleaved)")


def profile_model(spec: str, batch_size: int, steps: int = 30, warmup: int = 5,
                  device: str = "cpu", threads: int | None = None,
                  overlap: bool = True, retries: int = 1, on_note=None,
                  tick=None, keep_memory: bool = False, autocast: str | None = None,
                  on_start=None) -> ProfileRun:
    """Run ``warmup`` + ``steps`` training steps of MODEL ``spec`` with and without hooks.

    ``spec``: ``zoo:NAME[?key=value&...]``, ``path/to/file.py:fn`` or ``package.module:fn``
    (``fn`` returns ``(model, (inputs, target), loss_fn)``). The profile has one profiled step
    per measured step that did not stall (``quality.py``), and the DAG of the PipeDream importer
    with ``overlap``. A measurement that looks busy is taken again up to ``retries`` times and
    the quietest kept; ``on_note(line)`` hears why; ``tick()`` follows each pair of steps;
    ``on_start()`` comes once the model is built on its device (every check passed).
    ``keep_memory``: glibc keeps freed memory from here on, for the rest of the process
    (``memory.keep_freed_memory``), so the steps do not fault freed memory in again.
    ``autocast``: "bfloat16" or "float16", the forward and loss under torch.autocast (mixed
    precision: parameters, gradients, update float32); float16 with GradScaler's scaling.
    """
    _check_numbers(batch_size, steps, warmup, threads, retries)
    check_autocast(autocast)
    torch = _import_torch()
    from .build import build_profile

    dev = _device(torch, device)
    if keep_memory:
        from .memory import keep_freed_memory

        keep_freed_memory()
    old_threads = torch.get_num_threads()
    try:
        if threads:
            torch.set_num_threads(threads)
        with torch.random.fork_rng(devices=[]):  # seed our random data, not the caller's RNG
            torch.manual_seed(0)
            measured, (kept, dropped), quality, work = _measure_quietest(
                torch, (spec, autocast), batch_size, dev, (steps, warmup, retries), (on_note, tick, on_start))
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(old_threads)
    job = Job(model=work.name, batch_size=batch_size, framework=f"pytorch {torch.__version__}",
              device=_device_name(torch, dev, used_threads), overlap=overlap,
              source=f"sgdsim profile {spec}" + (f" --autocast {autocast}" if autocast else ""))
    # medians: the overhead figure measures the hooks, not steps a scheduler's slice stalled
    profiled, plain = median(measured.profiled_steps_s), median(measured.plain_steps_s)
    extra = {"profiler": {**_notes(measured, spec, (steps, warmup, used_threads), profiled, plain),
                          **_os_notes(measured, keep_memory),
                          "autocast": autocast, "grad_scaler": needs_scaler(autocast),
                          "quality": {**quality.to_json(), "dropped_steps": dropped}}}
    return ProfileRun(profile=build_profile(kept, job, overlap, extra),
                      profiled_step_s=profiled, plain_step_s=plain, quality=quality)


def _measure_quietest(torch, model, batch_size, dev, counts, hooks):
    """Measure; while the machine looks busy and retries are left, measure again. Returns the
    attempt with the fewest reasons to doubt it (then the least spread): its measurement, that
    without its stalled steps and their indices (``drop_stalled``), its quality; and the
    workload."""
    from ..cpu_load import CpuWatch
    from .quality import drop_stalled, judge, recorded_s
    from .runner import measure
    from .spec import load_workload

    (spec, autocast), (steps, warmup, retries), (on_note, tick, on_start) = model, counts, hooks
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
    work = load_workload(spec, batch_size).to(dev)
    work.autocast = autocast
    if on_start is not None:
        on_start()
    attempts = []
    for attempt in range(retries + 1):
        watch = CpuWatch().start()
        m = measure(work, steps, warmup, sync, tick)
        kept = drop_stalled(m)
        q = judge(m.plain_steps_s, m.profiled_steps_s, recorded_s(kept[0]), watch.cores())
        attempts.append((m, kept, q))
        if not q.shaky:
            break
        if attempt < retries and on_note is not None:
            on_note(f"the machine looks busy ({'; '.join(q.reasons)}): measuring again")
    m, kept, q = min(attempts, key=lambda a: (len(a[2].reasons), a[2].spread))
    return m, kept, q, work


def _check_numbers(batch_size, steps, warmup, threads, retries=0) -> None:
    for name, value, low in (("batch size", batch_size, 1), ("steps", steps, 1),
                             ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ConfigError(f"threads must be a positive integer, got {threads!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")


def _import_torch():
    try:
        import torch
    except ImportError:
        raise ConfigError(NEEDS_TORCH) from None
    return torch


def _device(torch, device: str):
    if not isinstance(device, str) or not (device == "cpu" or device.startswith("cuda")):
        raise ConfigError(f"device must be cpu or cuda[:N], got {device!r}")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"device must be cpu or cuda[:N], got {device!r}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {device}: CUDA is not available "
                              f"(torch {torch.__version__}, no usable GPU)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"--device {device}: only {torch.cuda.device_count()} GPU(s)")
    return dev


def _device_name(torch, dev, threads: int) -> str:
    if dev.type == "cuda":
        return f"{dev} ({torch.cuda.get_device_name(dev)})"
    return f"cpu ({threads} threads, {cpu_model()})"


def device_of_name(name: str) -> tuple[str, int] | None:
    """``_device_name`` read back: the device it timed on ("cpu", "cuda" or "cuda:K") and its
    threads (1 on a GPU); None for a name it does not write."""
    if cuda := re.match(r"(cuda(?::\d+)?) \(", name):
        return cuda.group(1), 1
    if cpu := re.match(r"cpu \((\d+) threads, ", name):
        return "cpu", int(cpu.group(1))
    return None


def cpu_model() -> str:
    """The CPU's model name: a device name's, and the benchmark tables' footer."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _os_notes(m, keep_memory: bool) -> dict:
    """The median plain step's cost to the OS (``memory.os_cost``) and how memory was kept."""
    return {"keep_memory": keep_memory,
            "plain_faulted_bytes": median(m.plain_faulted_bytes),
            "plain_kernel_s": median(m.plain_kernel_s)}


def _notes(m, spec: str, run: tuple, profiled: float, plain: float) -> dict:
    """Written as the profile's top-level ``profiler`` field (kept by load/save)."""
    steps, warmup, threads = run
    return {"spec": spec, "steps": steps, "warmup": warmup, "threads": threads,
            "profiled_step_s": profiled, "plain_step_s": plain, "overhead": profiled / plain - 1,
            "profiled_steps_s": m.profiled_steps_s, "plain_steps_s": m.plain_steps_s,
            "layers": len(m.names), "parameters": int(sum(m.param_counts)),
            "parameter_bytes": int(sum(m.param_bytes)), "unused_parameters": m.unused_params,
            "grad_ready_order": [m.names[i] for i in m.ready_order]}
