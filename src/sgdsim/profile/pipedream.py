"""Import PipeDream profiler output (``graph.txt``) as a one-step profile.

PipeDream (msr-fiddle/pipedream) profiles one GPU layer by layer: forward and backward time in
milliseconds, activation and parameter sizes in bytes, and the layer graph. We turn each layer
into forward/backward compute ops on the worker and, for layers with parameters, a downlink
(pull), an uplink (push) and a parameter-server update. Rules: docs/profile-format.md.
"""
from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigError, ProfileError
from .io import validate_profile
from .model import COMM, COMPUTE, DOWNLINK, PS, UPLINK, WORKER, Job, Op, Profile

FRAMEWORK = "pytorch (PipeDream profiler)"
DEVICE = "GPU (PipeDream profile)"

_NODE_RE = re.compile(
    r"^(?P<id>\S+) -- (?P<repr>.*) -- forward_compute_time=(?P<fwd>[^,]+), "
    r"backward_compute_time=(?P<bwd>[^,]+), activation_size=(?P<act>[^,]+), "
    r"parameter_size=(?P<param>[^,]+)$")
_EDGE_RE = re.compile(r"^\s+(?P<src>\S+) -- (?P<dst>\S+)$")


@dataclass(frozen=True)
class _Layer:
    id: str
    repr: str
    fwd_ms: float
    bwd_ms: float
    param_bytes: float
    line: int


@dataclass
class _Graph:
    layers: dict[str, _Layer]  # Input nodes already removed
    preds: dict[str, list[str]]
    succs: dict[str, list[str]]
    order: list[str]  # topological


def import_pipedream(graph_path, batch_size: int, overlap: bool = True,
                     update_s_per_mb: float = 0.0, model_name: str | None = None) -> Profile:
    """Read a PipeDream ``graph.txt`` and build its one-step profile.

    ``update_s_per_mb``: parameter-server update time per MB (1e6 bytes) of a layer's
    parameters; PipeDream does not measure it, so the default 0 makes updates free.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ConfigError(f"batch size must be a positive integer, got {batch_size!r}")
    if not (math.isfinite(update_s_per_mb) and update_s_per_mb >= 0):
        raise ConfigError(f"update time per MB must be a non-negative number, "
                          f"got {update_s_per_mb!r}")
    path = Path(graph_path)
    graph = _read_graph(path)
    ops, durations = _build_ops(graph, overlap, update_s_per_mb)
    job = Job(model=model_name or _model_name(path), batch_size=batch_size, framework=FRAMEWORK,
              device=DEVICE, bandwidth_bps=None, overlap=overlap, source=path.name)
    op_index = {op.id: i for i, op in enumerate(ops)}
    durations_s = np.zeros((1, len(ops)))
    for op_id, seconds in durations.items():
        durations_s[0, op_index[op_id]] = seconds
    profile = Profile(job=job, ops=tuple(ops), durations_s=durations_s)
    return validate_profile(profile, str(path))


def _model_name(path: Path) -> str:
    # PipeDream's own layout is profiles/<model>/graph.txt; the shared copies are <model>.graph.txt.
    if path.name == "graph.txt" and path.parent.name:
        return path.parent.name
    return path.stem.removesuffix(".graph")


# ----------------------------------------------------------------------------- parsing

def _read_graph(path: Path) -> _Graph:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"pipedream graph {path}: cannot read file ({exc})") from None
    nodes: dict[str, _Layer] = {}
    edges: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        edge = _EDGE_RE.match(line)
        if edge:
            edges.append((edge["src"], edge["dst"], lineno))
            continue
        layer = _parse_node(path, lineno, line)
        if layer.id in nodes:
            _fail(path, lineno, f"node {layer.id!r} defined twice (first on line "
                                f"{nodes[layer.id].line})")
        nodes[layer.id] = layer
    return _make_graph(path, nodes, edges)


def _fail(path: Path, lineno: int, msg: str):
    raise ProfileError(f"pipedream graph {path}: line {lineno}: {msg}")


def _parse_node(path: Path, lineno: int, line: str) -> _Layer:
    m = _NODE_RE.match(line.rstrip())
    if not m:
        _fail(path, lineno, f"cannot parse {line.strip()[:60]!r} (expected a node line "
                            f"'nodeN -- <layer> -- forward_compute_time=...' or an edge line)")
    values = {}
    for field in ("fwd", "bwd", "param"):
        try:
            values[field] = float(m[field])
        except ValueError:
            _fail(path, lineno, f"{m.group(field)!r} is not a number")
        if not (math.isfinite(values[field]) and values[field] >= 0):
            name = {"fwd": "forward_compute_time", "bwd": "backward_compute_time",
                    "param": "parameter_size"}[field]
            _fail(path, lineno, f"{name} must be a non-negative number, got {m[field]}")
    return _Layer(id=m["id"], repr=m["repr"], fwd_ms=values["fwd"], bwd_ms=values["bwd"],
                  param_bytes=values["param"], line=lineno)


def _make_graph(path: Path, nodes: dict[str, _Layer], edges) -> _Graph:
    # Input nodes are data loading, not training work: drop them and their edges.
    layers = {k: v for k, v in nodes.items() if not v.repr.startswith("Input")}
    if not layers:
        raise ProfileError(f"pipedream graph {path}: no layers (besides Input)")
    preds: dict[str, list[str]] = {k: [] for k in layers}
    succs: dict[str, list[str]] = {k: [] for k in layers}
    edge_line: dict[tuple[str, str], int] = {}
    for src, dst, lineno in edges:
        for end in (src, dst):
            if end not in nodes:
                _fail(path, lineno, f"edge names unknown node {end!r}")
        if src in layers and dst in layers and (src, dst) not in edge_line:
            edge_line[(src, dst)] = lineno
            preds[dst].append(src)
            succs[src].append(dst)
    order = _topological(layers, preds, succs)
    if len(order) < len(layers):
        lineno = _cycle_edge_line(set(layers) - set(order), preds, edge_line)
        _fail(path, lineno, "edges form a cycle")
    rank = {n: i for i, n in enumerate(order)}
    for node in layers:  # deps listed in topological order, independent of file order
        preds[node].sort(key=rank.__getitem__)
        succs[node].sort(key=rank.__getitem__)
    return _Graph(layers=layers, preds=preds, succs=succs, order=order)


def _node_key(node: str) -> tuple[int, str]:
    # nodeN numbering follows the model's definition, so ties are broken by N (this
    # reproduces the order of the shared <model>.layers.csv files).
    digits = re.sub(r"\D", "", node)
    return (int(digits) if digits else -1, node)


def _topological(layers, preds, succs) -> list[str]:
    waiting = {n: len(preds[n]) for n in layers}
    heap = [(_node_key(n), n) for n, k in waiting.items() if k == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        node = heapq.heappop(heap)[1]
        order.append(node)
        for nxt in succs[node]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(heap, (_node_key(nxt), nxt))
    return order


def _cycle_edge_line(stuck: set[str], preds, edge_line) -> int:
    # Each stuck node has a stuck predecessor; walking back must close a cycle.
    seen: set[str] = set()
    node = min(stuck, key=_node_key)
    while node not in seen:
        seen.add(node)
        prev = next(p for p in preds[node] if p in stuck)
        last_edge = (prev, node)
        node = prev
    return edge_line[last_edge]


# ----------------------------------------------------------------------------- ops

def _build_ops(g: _Graph, overlap: bool, update_s_per_mb: float):
    """Ops in file order (downlinks, forwards, backwards, uplinks, updates) and durations."""
    with_params = [n for n in g.order if g.layers[n].param_bytes > 0]
    has_params = set(with_params)
    backward_order = list(reversed(g.order))
    sinks = [n for n in g.order if not g.succs[n]]
    # bwd(L) is needed only by the backward of L's predecessors: roots' backwards end the pass.
    terminal_bwd = [f"bwd:{n}" for n in backward_order if not g.preds[n]]
    all_down = [f"down:{n}" for n in with_params]

    def op(prefix, node, kind, resource, deps, size=0.0) -> Op:
        return Op(id=f"{prefix}:{node}", name=g.layers[node].repr, layer=node, kind=kind,
                  resource=resource, deps=tuple(deps), size_bytes=size)

    ops = [op("down", n, COMM, DOWNLINK, [], g.layers[n].param_bytes) for n in with_params]
    for n in g.order:
        own = [f"down:{n}"] if overlap and n in has_params else []
        root = all_down if not overlap and not g.preds[n] else []
        ops.append(op("fwd", n, COMPUTE, WORKER, own + root + [f"fwd:{p}" for p in g.preds[n]]))
    for n in backward_order:
        # The loss needs every model output, so each output layer's backward waits for all.
        deps = [f"fwd:{s}" for s in sinks] if not g.succs[n] else [
            f"bwd:{s}" for s in g.succs[n]]
        ops.append(op("bwd", n, COMPUTE, WORKER, deps))
    uplinks = [n for n in backward_order if n in has_params]
    for n in uplinks:
        ops.append(op("up", n, COMM, UPLINK, [f"bwd:{n}"] if overlap else terminal_bwd,
                      g.layers[n].param_bytes))
    ops.extend(op("upd", n, COMPUTE, PS, [f"up:{n}"]) for n in uplinks)

    durations = {}
    for n, layer in g.layers.items():
        durations[f"fwd:{n}"] = _ms_to_s(layer.fwd_ms)
        durations[f"bwd:{n}"] = _ms_to_s(layer.bwd_ms)
        if n in has_params:
            durations[f"upd:{n}"] = update_s_per_mb * layer.param_bytes / 1e6
    return ops, durations


def _ms_to_s(ms: float) -> float:
    # Rounding drops float noise (0.269 ms -> 0.00026900000000000003 s) from the written file;
    # the profiler's resolution is 1 us, far coarser than 1e-12 s.
    return round(ms / 1000.0, 12)
