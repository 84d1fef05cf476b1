"""Write a simulated timeline as Chrome Trace Event JSON (opens in Perfetto UI / chrome://tracing).

One process per worker (threads: compute, and each PS link it uses) and one per parameter
server (one thread per worker's update core, since PS updates run on separate cores).
"""
from __future__ import annotations

import json

from .errors import ConfigError
from .profile.model import PS
from .sim.simulate import Timeline

_PS_PID0 = 100_000


def chrome_trace(tl: Timeline) -> dict:
    events: list[dict] = []
    seen_threads: set[tuple[int, int]] = set()
    for w in sorted(set(tl.worker.tolist())):
        events.append(_meta("process_name", w + 1, 0, {"name": f"worker {w} ({tl.worker_class[w]})"}))
    for p in sorted(set(int(x) for x in tl.op_ps)):
        events.append(_meta("process_name", _PS_PID0 + p, 0, {"name": f"parameter server {p}"}))
    for w, r, op, t0, t1, step in zip(tl.worker.tolist(), tl.resource.tolist(), tl.op.tolist(),
                                      tl.start_s.tolist(), tl.end_s.tolist(), tl.step.tolist()):
        res = tl.resource_names[r]
        if res.startswith(PS):
            pid, tid, tname = _PS_PID0 + int(tl.op_ps[op]), w, f"update core for worker {w}"
        else:
            pid, tid, tname = w + 1, r, res
        if (pid, tid) not in seen_threads:
            seen_threads.add((pid, tid))
            events.append(_meta("thread_name", pid, tid, {"name": tname}))
        events.append({"name": tl.op_names[op], "cat": res, "ph": "X", "pid": pid, "tid": tid,
                       "ts": t0 * 1e6, "dur": max(0.0, (t1 - t0) * 1e6),
                       "args": {"op": tl.op_ids[op], "step": step, "worker": w}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _meta(name: str, pid: int, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def write_chrome_trace(tl: Timeline, path: str, overwrite: bool = False) -> int:
    """Write the trace; returns the number of op slices. Never overwrites unless asked."""
    data = chrome_trace(tl)
    try:
        with open(path, "w" if overwrite else "x", encoding="utf-8") as f:
            json.dump(data, f)
    except FileExistsError:
        raise ConfigError(f"{path} exists; refusing to overwrite (use --force)") from None
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror}") from None
    return len(tl.op)
