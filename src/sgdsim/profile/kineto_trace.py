"""Reading a torch.profiler / Kineto Chrome trace: its complete events, the top-level CPU ops
per thread, and (GPU traces) the device kernels each op launched. ``kineto.py`` builds the
profile from them."""
from __future__ import annotations

import bisect
import gzip
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, ProfileError
from ..tagged_json import parse_json
from ..units import parse_number

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")  # work that runs on the GPU itself
# GPU traces repeat record_function ranges on the stream ("gpu_user_annotation"): not layers
GPU_SIDE = DEVICE_CATS + ("gpu_user_annotation",)
EPS_US = 1e-3  # timestamps are printed to 1 ns; containment tolerates that rounding
MAX_US = 1e18  # |ts| and dur, microseconds: 30,000 years; sums of them stay finite


@dataclass
class _Ev:
    """One complete ("X") trace event; ``thread`` is (pid, tid), times in microseconds."""

    name: str
    cat: str
    thread: tuple
    ts: float
    dur: float  # as written: end - ts would lose nanoseconds to the large timestamps
    args: dict
    end: float = 0.0

    def __post_init__(self):
        self.end = self.ts + self.dur


@dataclass
class _Trace:
    path: Path
    events: list[_Ev]
    device: str
    on_gpu: bool
    by_thread: dict = field(default_factory=dict)  # thread -> top-level cpu ops by start
    starts: dict = field(default_factory=dict)  # thread -> their start times, for bisect
    device_us: dict = field(default_factory=dict)  # id(top-level op) -> [kernel us, last end]


def _in_range(value, lo: float, hi: float) -> bool:
    """A number (no bool; a huge int compared without float()) within [lo, hi]."""
    try:
        parse_number(value, "value", lo=lo, hi=hi)
    except ConfigError:
        return False
    return True


def _fail(path: Path, msg: str):
    raise ProfileError(f"kineto trace {path}: {msg}")


def _read_trace(path: Path) -> _Trace:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        _fail(path, f"cannot read file ({exc.strerror or exc})")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            _fail(path, f"not a valid gzip file ({exc})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        _fail(path, "not UTF-8 text")
    doc = parse_json(text, f"kineto trace {path}", ProfileError)
    raw_events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(raw_events, list):
        _fail(path, "no traceEvents list (not a Chrome trace written by torch.profiler)")
    events = [_event(path, i, e) for i, e in enumerate(raw_events)
              if isinstance(e, dict) and e.get("ph") == "X"]
    if not events:
        _fail(path, "has no complete (ph 'X') events: the profiler recorded nothing")
    events.sort(key=lambda e: (e.ts, -e.end))  # parents before the children they contain
    on_gpu = any(e.cat in DEVICE_CATS for e in events)
    trace = _Trace(path, events, _device_name(doc, on_gpu), on_gpu)
    trace.by_thread = _top_level_ops(events)
    trace.starts = {t: [o.ts for o in ops] for t, ops in trace.by_thread.items()}
    if on_gpu:
        _attach_kernels(trace)
    return trace


def _event(path: Path, i: int, e: dict) -> _Ev:
    ts, dur = e.get("ts"), e.get("dur", 0)
    for what, v in (("ts", ts), ("dur", dur)):  # a 400-digit ts: float() would overflow
        if isinstance(v, (bool, str)) or not _in_range(v, -MAX_US, MAX_US):
            _fail(path, f"traceEvents[{i}]: {what} is not a finite number of microseconds "
                        f"up to {MAX_US:g} ({str(v)[:40]!r})")
    if dur < 0:
        _fail(path, f"traceEvents[{i}]: dur is negative ({dur})")
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    seq = args.get("Sequence number")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        _fail(path, f"traceEvents[{i}]: Sequence number is not an integer ({seq!r})")
    return _Ev(str(e.get("name", "")), str(e.get("cat", "")),
               (str(e.get("pid")), str(e.get("tid"))), float(ts), float(dur), args)


def _device_name(doc: dict, on_gpu: bool) -> str:
    props = doc.get("deviceProperties")
    if on_gpu and isinstance(props, list) and props and isinstance(props[0], dict):
        return f"cuda ({props[0].get('name', 'GPU')}, torch.profiler trace)"
    return "GPU (torch.profiler trace)" if on_gpu else "cpu (torch.profiler trace)"


def _top_level_ops(events: list[_Ev]) -> dict:
    """Per thread, the cpu_op events no other cpu_op contains: the units that time adds over."""
    found: dict = {}
    open_end: dict = {}
    for e in events:
        if e.cat != "cpu_op":
            continue
        if e.ts < open_end.get(e.thread, -math.inf) - EPS_US:
            continue  # inside the current top-level op of its thread
        found.setdefault(e.thread, []).append(e)
        open_end[e.thread] = e.end
    return found


def _containing(trace: _Trace, thread, ts: float) -> _Ev | None:
    """The top-level cpu op of ``thread`` running at ``ts``."""
    ops = trace.by_thread.get(thread, [])
    i = bisect.bisect_right(trace.starts.get(thread, []), ts + EPS_US) - 1
    return ops[i] if i >= 0 and ts <= ops[i].end + EPS_US else None


def _attach_kernels(trace: _Trace) -> None:
    """GPU trace: charge each kernel (memcpy, memset) to the top-level op that launched it.

    A device event and the runtime call that launched it (cudaLaunchKernel...) share
    ``args.correlation``; the runtime call runs inside the op on the launching CPU thread.
    """
    device: dict[int, list[_Ev]] = {}
    for e in trace.events:
        if e.cat in DEVICE_CATS and type(e.args.get("correlation")) is int:
            device.setdefault(e.args["correlation"], []).append(e)
    for e in trace.events:
        corr = e.args.get("correlation")
        if e.cat in DEVICE_CATS or type(corr) is not int or corr not in device:
            continue
        unit = _containing(trace, e.thread, e.ts)
        if unit is None or unit is e:
            continue
        slot = trace.device_us.setdefault(id(unit), [0.0, -math.inf])
        for k in device.pop(corr):  # pop: each kernel counts once
            slot[0] += k.dur
            slot[1] = max(slot[1], k.end)


def _time_us(trace: _Trace, unit: _Ev) -> tuple[float, float]:
    """(duration, end) of a unit's work: the op itself on CPU, its kernels on a GPU."""
    if not trace.on_gpu:
        return unit.dur, unit.end
    busy, end = trace.device_us.get(id(unit), (0.0, -math.inf))
    return busy, (end if busy else unit.end)  # no kernels: the op's own end orders it
