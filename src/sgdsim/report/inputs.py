"""The report's inputs block: every input that shaped the prediction, read from the specs the
prediction ran with (``sgdsim.spec``) and from its points, never from the command line, so
the block cannot say something other than what was predicted.

A value equal to the one the specs take when nothing is given is marked "(default)"; one equal
to what the hardware file alone gives (and not the default) "(hardware file)". Inputs of an
architecture other than the one predicted are not listed; every other spec field that differs
from its default is, under its spec name, so an input added to the specs later shows up
without a change here.
"""
from __future__ import annotations

import dataclasses
import inspect
import re

from ..hardware import load_hardware
from ..parse.hardware import hardware_keywords
from ..parse.keywords import specs as keyword_specs
from ..predict import parse_workers, predict
from ..spec import MODES, SHARINGS, Cluster, Control, Strategy
from ..units import format_bandwidth
from .model import Series

DEFAULT = " (default)"
FROM_FILE = " (hardware file)"
# Spec fields with a row of their own, or (timeline) an output rather than an input.
OWN_ROWS = {"strategy.arch", "strategy.mode", "strategy.sharing", "strategy.ps_count", "strategy.overlap",
            "strategy.collective", "strategy.bucket_size_bytes", "cluster.link.bandwidth_Bps",
            "cluster.nodes.gpus_per_node", "cluster.nodes.intra_bandwidth_Bps",
            "control.seed", "control.warmup_steps", "control.steps_per_worker",
            "control.replications", "control.jitter_cv", "control.timeline",
            "control.margin.level", "control.margin.model_error_rel",
            "control.margin.coarse_error_rel", "control.margin.coarse_async_error_rel",
            "control.margin.source"}


@dataclasses.dataclass(frozen=True)
class Specs:
    """The specs a prediction ran with, and those it would have taken from defaults alone and
    from the hardware file alone (None: no file), which say where each value came from."""

    used: tuple[Strategy, Cluster, Control]
    default: tuple[Strategy, Cluster, Control]
    from_file: tuple[Strategy, Cluster, Control] | None = None

    @classmethod
    def of(cls, strategy: Strategy, cluster: Cluster, control: Control,
           hardware: str | None = None) -> Specs:
        from_file = None
        if hardware:
            # The file's measured dynamics depend on the strategy (and on whether flows are
            # capped, not on the cap): ask for this one's.
            given = {"arch": strategy.arch, "mode": strategy.mode, "ps_count": strategy.ps_count,
                     "sharing": strategy.sharing, "flow_cap": cluster.link.flow_cap_Bps}
            kw = hardware_keywords(load_hardware(hardware), given)
            kw.pop("flow_cap", None)  # given to choose the dynamics; the file holds none
            from_file = keyword_specs(**kw)
        return cls((strategy, cluster, control), keyword_specs(), from_file)

    def value(self, path: str):
        return _get(self.used, path)

    def tag(self, path: str) -> str:
        v = self.value(path)
        if v == _get(self.default, path):
            return DEFAULT
        # The file describes the network and the runs, never the strategy (given above).
        from_file = self.from_file is not None and not path.startswith("strategy.")
        return FROM_FILE if from_file and v == _get(self.from_file, path) else ""


def _get(specs: tuple, path: str):
    root, *rest = path.split(".")
    obj = specs[("strategy", "cluster", "control").index(root)]
    for name in rest:
        obj = getattr(obj, name)
    return obj


def bandwidth(Bps: float) -> str:
    """10 Gbps: the units users type, with a space."""
    return re.sub(r"(?<=\d)(?=[a-zA-Z])", " ", format_bandwidth(Bps), count=1)


def worker_counts(ws) -> str:
    """1–16 for a run of three or more consecutive counts, else a list: 1, 2, 4, 8."""
    ws, parts, i = sorted(set(ws)), [], 0
    while i < len(ws):
        j = i
        while j + 1 < len(ws) and ws[j + 1] == ws[j] + 1:
            j += 1
        parts += [f"{ws[i]}–{ws[j]}"] if j - i >= 2 else [str(w) for w in ws[i:j + 1]]
        i = j + 1
    return ", ".join(parts)


def input_rows(specs: Specs, series: tuple[Series, ...], profiles: tuple[dict, ...],
               model: str, hardware: str | None = None) -> tuple[tuple[str, str], ...]:
    """(input, value) rows: what was predicted, how it was distributed, on what, how sure."""
    defaults = inspect.signature(predict).parameters
    workers = sorted({p["workers"] for s in series for p in s.points})
    models = list(dict.fromkeys(s.model for s in series))
    rows = [("profiles", "; ".join(_profile(p) for p in profiles) or "–"),
            ("workers", worker_counts(workers)
             + (DEFAULT if workers == parse_workers(defaults["workers"].default) else "")),
            ("models", ", ".join(models) + (DEFAULT if model == defaults["model"].default
                                            else f" (--model {model})")),
            ("bandwidth (each node's NIC)",
             bandwidth(specs.value("cluster.link.bandwidth_Bps")) + specs.tag("cluster.link.bandwidth_Bps"))]
    rows += _strategy_rows(specs, models) + _node_rows(specs)
    rows.append(("hardware file", hardware if hardware else "none: a nominal network" + DEFAULT))
    rows += _interval_rows(specs, series)
    if "fine" in models:
        rows.append(("simulator", _simulator(specs)))
    return tuple(rows + _other_rows(specs))


def _profile(p: dict) -> str:
    batch = f", batch {p['batch_size']}" if "batch_size" in p else ""
    return f"{p.get('name', '?')} ({p.get('path', '?')}{batch})"


def _strategy_rows(specs: Specs, models: list[str]) -> list[tuple[str, str]]:
    strategy = specs.used[0]
    arch = strategy.architecture
    rows = [("architecture", f"{strategy.arch}: {arch.help}" + specs.tag("strategy.arch")),
            ("mode", strategy.mode + specs.tag("strategy.mode"))]
    if "sharing" in arch.options:
        rows.append(("link sharing", _sharing(strategy, models)))
    if arch.servers:
        n = strategy.ps_count
        rows.append(("parameter servers", "as the profile places them" + DEFAULT if n is None else
                     str(n) + specs.tag("strategy.ps_count")))
    if "collective" in arch.options:
        rows.append(("collective", strategy.collective + specs.tag("strategy.collective")))
    if "bucket_size" in arch.options:
        size = strategy.bucket_size_bytes
        rows.append(("gradient buckets", "none, one call per layer" + DEFAULT if size is None
                     else f"{size / 1e6:g} MB"))
    rows.append(("transfers", "as soon as the profile's DAG allows" + DEFAULT if strategy.overlap else
                 "after the step's compute on their side (--no-overlap)"))
    return rows


def _sharing(strategy: Strategy, models: list[str]) -> str:
    if strategy.sharing is not None:
        return strategy.sharing
    text = strategy.fine_sharing
    # Async PS: the coarse model's own default is Eq. 5's threshold, not a simulated policy.
    if "coarse" in models and strategy.mode == MODES[0]:
        threshold = next(n for n, s in SHARINGS.items() if not s.simulated)
        text += f" in the simulator, {threshold} (Eq. 5) in the coarse model"
    return text + DEFAULT


def _node_rows(specs: Specs) -> list[tuple[str, str]]:
    nodes = specs.used[1].nodes
    rows = []
    if nodes.gpus_per_node != 1:
        rows.append(("devices per node", f"{nodes.gpus_per_node}" + specs.tag("cluster.nodes.gpus_per_node")))
    if nodes.intra_bandwidth_Bps is not None:
        Bps = nodes.intra_bandwidth_Bps
        rows.append(("intra-node bandwidth (each device)", f"{bandwidth(Bps)} ({Bps / 1e9:g} GB/s)"))
    return rows


def _interval_rows(specs: Specs, series: tuple[Series, ...]) -> list[tuple[str, str]]:
    """The level from the control, each model's margin and its source from the points: the
    evaluation widens a margin (an estimated profile's error) after the control is built."""
    margins = {}
    for s in series:
        for p in s.points:
            if (p.get("model_error_rel") or 0.0) > 0:
                margins[s.model] = (p["model_error_rel"], p.get("margin_source") or "")
    sources = "; ".join(dict.fromkeys(src for _, src in margins.values() if src))
    margin = (", ".join(f"{m} ±{100 * e:.1f} %" for m, (e, _) in margins.items())
              + (f" ({sources})" if sources else "")) if margins else "none"
    level = specs.value("control.margin.level")
    return [("interval level", f"{100 * level:.0f} % of real runs" + specs.tag("control.margin.level")),
            ("model's error in each interval", margin)]


def _simulator(specs: Specs) -> str:
    c = specs.used[2]
    parts = [(f"seed {c.seed}", "seed"), (f"warm-up steps {c.warmup_steps}", "warmup_steps"),
             (f"steps {c.steps_per_worker or 'auto'}", "steps_per_worker"),
             (f"replications {c.replications or 'auto'}", "replications"),
             (f"compute jitter CV {c.jitter_cv:g}", "jitter_cv")]
    return "; ".join(text + specs.tag(f"control.{name}") for text, name in parts)


def _other_rows(specs: Specs) -> list[tuple[str, str]]:
    """Every other spec field that differs from its default, named by its place in the specs."""
    rows = []
    for path in _leaves(specs.default, ""):
        if path in OWN_ROWS or specs.value(path) == _get(specs.default, path):
            continue
        rows.append((_label(path), _show(path, specs.value(path)) + specs.tag(path)))
    return rows


UNITS = (("_s_per_byte", " (s per byte)"), ("_Bps", ""), ("_bytes", " (bytes)"), ("_s", " (s)"),
         ("_rel", " (relative)"))


def _label(path: str) -> str:
    """cluster.link.overhead_beta_s -> link · overhead beta (s)."""
    *parents, name = path.split(".")[1:]
    unit = next(((suffix, text) for suffix, text in UNITS if name.endswith(suffix)), ("", ""))
    name = name[:len(name) - len(unit[0])] if unit[0] else name
    return " · ".join(parents + [name.replace("_", " ") + unit[1]])


def _leaves(obj, prefix: str) -> list[str]:
    if isinstance(obj, tuple) and not prefix:
        return [p for name, o in zip(("strategy", "cluster", "control"), obj)
                for p in _leaves(o, name)]
    if dataclasses.is_dataclass(obj):
        return [p for f in dataclasses.fields(obj)
                for p in _leaves(getattr(obj, f.name), f"{prefix}.{f.name}")]
    return [prefix]


def _show(path: str, v) -> str:
    if v is None:
        return "none"
    if path.endswith("_Bps") and isinstance(v, (int, float)):
        return bandwidth(v)
    text = f"{v:g}" if isinstance(v, float) else str(v)
    # A measured table from a hardware file would fill the page; the file is shown below.
    return text if len(text) <= 80 else text[:77] + "…"
