"""``run_training``: real distributed training in the lab, measured in steady state.

One run: start the processes (M parameter servers on hosts 0..M-1 and workers on hosts
M..M+W-1, or W all-reduce ranks on hosts 1..W), let them agree on a start time t0 (the PS, or
rank 0, picks it once every process is connected, so torch imports and model building are not
measured), sleep until
t0 + duration, stop everything. Steps whose completion time lies in (warm-up, duration] count;
throughput = batch · Σ steps / (duration − warm-up).

Children report JSON lines on stdout (``wire.emit``); their stderr goes to a temporary file
whose last error line (not a torch warning after it: ``child_error``) becomes the message if
one fails. Whatever happens (an error, Ctrl-C, SIGTERM through the lab's handler), every child
is stopped before ``run_training`` returns.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ...errors import ConfigError, SgdsimError
from ...outputs import check_output_path
from ...units import parse_bandwidth_bps, parse_duration_s
from ..child_error import cause_line
from ..cluster import LabCluster, check_prerequisites
from .trainers import TORCH_DDP_BUCKET_MB, check_trainer

ARCHS, MODES = ("ps", "allreduce"), ("async", "sync")

STARTUP_TIMEOUT_S = 180.0  # W+1 processes importing torch on 2 cores
_PKG = "sgdsim.lab.train"


@dataclass(frozen=True)
class TrainResult:
    workers: int
    throughput: float            # examples/s, all workers, in the measured window
    steps: tuple[int, ...]       # steps each worker completed in the window
    duration_s: float            # the run's length from t0 (the window ends there)
    arch: str
    mode: str
    overlap: bool
    bandwidth_bps: float         # the lab's configured NIC rate
    model: str = ""
    batch_size: int = 0
    ps_count: int = 1
    window_s: float = 0.0        # duration_s - warm-up: the seconds the steps were counted in
    loss_first: float | None = None  # mean loss of the workers' first and last steps
    loss_last: float | None = None
    param_change: float | None = None  # PS: ‖θ_end − θ_0‖ / ‖θ_0‖; None for all-reduce
    # batch · Σ_workers n / (last completion in the window − last one before it): the same
    # measurement without the ±1 step per worker that counting in a fixed window costs
    throughput_intervals: float = 0.0
    # every completion of every worker, seconds since t0 (warm-up included): regime analysis
    step_times_s: tuple[tuple[float, ...], ...] = ()
    # with trace=True: every JSON line of every process (PS first), with per-tensor times
    events: tuple = ()
    # CPU seconds since t0 of every process that reports it (the server's at its end, a
    # worker's or rank's at its last step; servers first): is a host's CPU the bottleneck?
    cpu_s: tuple[float, ...] = ()

    def to_dict(self, with_times: bool = False) -> dict:
        d = asdict(self)
        d["steps"] = list(self.steps)
        if with_times:
            d["step_times_s"] = [list(t) for t in self.step_times_s]
        else:
            d.pop("step_times_s")
        if not (with_times and self.events):
            d.pop("events")
        return d


@dataclass(frozen=True)
class _Config:
    model: str
    workers: int
    batch_size: int
    bandwidth_bps: float
    arch: str
    mode: str
    overlap: bool
    duration_s: float
    warmup_s: float
    record_profile: str | None
    label: str  # the model as the user named it
    trace: bool = False
    ps_count: int = 1
    stagger_s: float = 0.0  # async PS: worker r starts its first step r·stagger_s after t0
    trainer: str = "lab"

    @property
    def hosts(self) -> int:
        return lab_hosts(self.workers, self.arch, self.ps_count)


def lab_hosts(workers: int, arch: str, ps_count: int = 1) -> int:
    """Lab hosts a run needs: the workers and the servers (all-reduce leaves host 0 idle)."""
    return max(2, workers + (ps_count if arch == "ps" else 1))


def run_training(model: str, workers: int, batch_size: int, bandwidth_bps, arch: str = "ps",
                 mode: str = "async", overlap: bool = False, duration_s=30.0, warmup_s=5.0,
                 lab: LabCluster | None = None, record_profile: str | None = None,
                 trace: bool = False, ps_count: int = 1, stagger_s: float = 0.0,
                 trainer: str = "lab") -> TrainResult:
    """Train ``model`` on ``workers`` lab hosts for ``duration_s``; see the module docstring.

    ``lab``: an up ``LabCluster`` with at least ``lab_hosts(...)`` hosts at ``bandwidth_bps`` (reused,
    left up), or None to bring one up and tear it down. ``trace``: the processes record
    per-tensor send/receive times (parameter server only), kept in ``TrainResult.events``.
    ``ps_count``: parameter servers sharing the model's layers (``models.shard_of``).
    ``stagger_s``: async PS only, worker r starts r·stagger_s later than worker 0 (the lab's
    workers otherwise start together, in lock-step; this starts them apart).
    ``trainer``: ``"lab"`` (the project's own) or ``"torch"`` (``TRAINERS``: held out from fits).
    """
    cfg = check_config(model, workers, batch_size, bandwidth_bps, arch, mode, overlap,
                       duration_s, warmup_s, record_profile, ps_count, stagger_s, trainer)
    cfg = replace(cfg, trace=bool(trace) and arch == "ps")
    if lab is not None:
        _check_lab(lab, cfg)
        return _run(lab, cfg)
    require_lab()
    with LabCluster(cfg.hosts, cfg.bandwidth_bps) as own:
        return _run(own, cfg)


def check_stagger(stagger_s, arch: str, mode: str) -> float:
    """The start stagger in seconds; a ConfigError line if it is not 0-60 s of async PS."""
    stagger = parse_duration_s(stagger_s)
    if stagger and (arch, mode) != ("ps", "async"):
        raise ConfigError("a start stagger applies to async parameter-server training")
    if not 0 <= stagger <= 60:
        raise ConfigError(f"the start stagger must be from 0 to 60 s, got {stagger:g} s")
    return stagger


def require_lab() -> None:
    if os.geteuid() != 0:
        raise ConfigError("sgdsim lab run needs root (it builds network namespaces and shapes "
                          "them with tc): run it with sudo")
    check_prerequisites()  # ip and tc


def check_config(model, workers, batch_size, bandwidth_bps, arch, mode, overlap, duration_s,
                 warmup_s, record_profile, ps_count: int = 1, stagger_s=0.0,
                 trainer: str = "lab") -> _Config:
    """Every check that needs no lab (one-line ``ConfigError``s); the normalised settings."""
    from .models import check_spec

    if arch not in ARCHS or mode not in MODES:
        raise ConfigError(f"arch must be one of {ARCHS} and mode one of {MODES}, "
                          f"got {arch!r}, {mode!r}")
    if arch == "allreduce" and mode == "async":
        raise ConfigError("ring all-reduce is synchronous: use --mode sync with --arch allreduce")
    for what, value in (("workers", workers), ("batch size", batch_size), ("ps count", ps_count)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{what} must be a positive integer, got {value!r}")
    if arch == "allreduce" and ps_count != 1:
        raise ConfigError("--ps-count applies to --arch ps, not allreduce")
    check_trainer(trainer, arch, overlap, ps_count, record_profile)
    if workers + ps_count > 250:
        raise ConfigError(f"a lab has at most 250 hosts: {workers} workers and {ps_count} "
                          "servers do not fit")
    duration, warmup = parse_duration_s(duration_s), parse_duration_s(warmup_s)
    if not duration > warmup:
        raise ConfigError(f"the duration ({duration:g} s) must be longer than the warm-up "
                          f"({warmup:g} s)")
    check_spec(model)
    spec = model
    if not model.startswith("lab:"):  # children may start elsewhere: make a path absolute
        target, _, fn = model.rpartition(":")
        spec = f"{Path(target).resolve()}:{fn}" if target.endswith(".py") else model
    if record_profile is not None:
        _check_record(record_profile, workers, arch, ps_count)
    return _Config(spec, workers, batch_size, parse_bandwidth_bps(bandwidth_bps), arch, mode,
                   bool(overlap), duration, warmup, record_profile, model, ps_count=ps_count,
                   stagger_s=check_stagger(stagger_s, arch, mode), trainer=trainer)


def _check_record(path: str, workers: int, arch: str, ps_count: int = 1) -> None:
    if workers != 1 or arch != "ps" or ps_count != 1:
        raise ConfigError("--record-profile records one worker and one PS: use --workers 1 "
                          "--arch ps (and one PS)")
    check_output_path(path, force=False)


def _check_lab(lab: LabCluster, cfg: _Config) -> None:
    if lab.hosts < cfg.hosts:
        raise ConfigError(f"the lab has {lab.hosts} hosts; {cfg.workers} workers need "
                          f"{cfg.hosts} (the first hosts are the servers', or host 0 is idle "
                          "for all-reduce)")
    if abs(lab.bandwidth_bps - cfg.bandwidth_bps) > 1e-6 * cfg.bandwidth_bps:
        raise ConfigError(f"the lab runs at {lab.bandwidth_bps:g} bit/s, not the requested "
                          f"{cfg.bandwidth_bps:g} bit/s: bring up a lab at that bandwidth")


# ----------------------------------------------------------------------------- child processes

class _Child:
    """A process in a lab host whose stdout JSON lines are collected by a thread."""

    def __init__(self, lab: LabCluster, host: int, argv: list[str], name: str, tmp: str,
                 env: dict | None = None):
        self.name, self.host = name, host
        self.events: list[dict] = []
        self.err = open(os.path.join(tmp, f"{name}.err"), "w+", encoding="utf-8")
        full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
        self.proc = lab.popen(host, [sys.executable, "-m", *argv], stdout=subprocess.PIPE,
                              stderr=self.err, text=True, env=full_env,
                              start_new_session=True)  # Ctrl-C reaches us only; we stop them
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass  # stray prints of a user's model code

    def find(self, event: str) -> dict | None:
        return next((e for e in self.events if e.get("event") == event), None)

    def error(self) -> str:
        self._reader.join(2.0)
        err = self.find("error")
        if err:
            return err["message"]
        self.err.flush()
        self.err.seek(0)
        return cause_line(self.err.read(), self.proc.returncode)

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5.0)
        self.err.close()


def _wait(children: list[_Child], until, timeout_s: float, what: str):
    """Poll until ``until()`` is truthy; a child that exits meanwhile is an error."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = until()
        if value:
            return value
        for c in children:
            if c.proc.poll() is not None:
                raise SgdsimError(f"lab run: {c.name} (lab host {c.host}) failed: {c.error()}")
        if time.monotonic() > deadline:
            raise SgdsimError(f"lab run: timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.05)


# ----------------------------------------------------------------------------- one run

def _run(lab: LabCluster, cfg: _Config) -> TrainResult:
    port = random.randint(20000, 29999)  # a fresh port: the last run's sockets may linger
    common = ["--model", cfg.model, "--batch-size", str(cfg.batch_size)]
    children: list[_Child] = []
    with tempfile.TemporaryDirectory(prefix="sgdsim-lab-run-") as tmp:
        try:
            if cfg.arch == "ps" and cfg.trainer == "torch":
                t0 = _start_rpc_ps(lab, cfg, common, port, tmp, children)
            elif cfg.arch == "ps":
                t0 = _start_ps(lab, cfg, common, port, tmp, children)
            else:
                t0 = _start_allreduce(lab, cfg, common, port, tmp, children)
            end = t0 + cfg.duration_s
            _wait(children, lambda: time.monotonic() >= end, cfg.duration_s + 5, "the run")
        finally:
            for c in children:  # the PS first: its summary must not see workers vanish
                c.stop()
    return _result(cfg, children)


def _start_ps(lab, cfg: _Config, common, port, tmp, children) -> float:
    record = ["--record"] if cfg.record_profile or cfg.trace else []
    M = cfg.ps_count
    servers = [_Child(lab, k, [f"{_PKG}.ps", *common, "--workers", str(cfg.workers), "--mode",
                               cfg.mode, "--port", str(port), "--shard", str(k), "--shards",
                               str(M), *record], "ps" if M == 1 else f"ps {k}", tmp)
               for k in range(M)]
    children.extend(servers)
    addresses = ",".join(lab.address(k) for k in range(M))
    for r in range(cfg.workers):
        argv = [f"{_PKG}.worker", *common, "--ps", addresses, "--port", str(port),
                "--rank", str(r), *record, *(["--overlap"] if cfg.overlap else []),
                *(["--delay", repr(r * cfg.stagger_s)] if cfg.stagger_s else [])]
        children.append(_Child(lab, M + r, argv, f"worker {r}", tmp))  # they retry connecting

    def started():  # every server announces its t0; the workers begin at the latest
        t0s = [s.find("start") for s in servers]
        return all(t0s) and {"t0": max(e["t0"] for e in t0s)}

    return _wait(children, started, STARTUP_TIMEOUT_S,
                 "the parameter servers and the workers")["t0"]


def _start_rpc_ps(lab, cfg: _Config, common, port, tmp, children) -> float:
    env = {"TP_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    base = [f"{_PKG}.rpc_ps", *common, "--world", str(cfg.workers + 1), "--address",
            lab.address(0), "--port", str(port), "--mode", cfg.mode]
    children.append(_Child(lab, 0, [*base, "--rank", "0"], "ps", tmp, env))
    for r in range(cfg.workers):
        delay = ["--delay", repr(r * cfg.stagger_s)] if cfg.stagger_s else []
        children.append(_Child(lab, 1 + r, [*base, "--rank", str(r + 1), *delay], f"worker {r}",
                               tmp, env))
    server = children[0]
    return _wait(children, lambda: server.find("start"), STARTUP_TIMEOUT_S,
                 "the RPC server and its workers")["t0"]


def _start_allreduce(lab, cfg: _Config, common, port, tmp, children) -> float:
    env = {"MASTER_ADDR": lab.address(1), "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": "eth0"}
    bucket = ["--bucket-mb", repr(TORCH_DDP_BUCKET_MB)] if cfg.trainer == "torch" else []
    for r in range(cfg.workers):
        argv = [f"{_PKG}.allreduce", *common, "--rank", str(r), "--world", str(cfg.workers),
                *(["--overlap"] if cfg.overlap else []), *bucket]
        children.append(_Child(lab, r + 1, argv, f"rank {r}", tmp, env))
    first = children[0]
    return _wait(children, lambda: first.find("start"), STARTUP_TIMEOUT_S, "the ranks")["t0"]


def _result(cfg: _Config, children: list[_Child]) -> TrainResult:
    steps = {r: [] for r in range(cfg.workers)}
    for c in children:
        for e in c.events:
            if e.get("event") == "step":
                steps[e["rank"]].append(e)
    counted = tuple(sum(cfg.warmup_s < e["t"] <= cfg.duration_s for e in steps[r])
                    for r in range(cfg.workers))
    rates = [_interval_rate([e["t"] for e in steps[r]], cfg) for r in range(cfg.workers)]
    window = cfg.duration_s - cfg.warmup_s
    firsts = [s[0]["loss"] for s in steps.values() if s]
    lasts = [s[-1]["loss"] for s in steps.values() if s]
    summary = children[0].find("summary") if cfg.arch == "ps" else None
    if cfg.record_profile:
        from .record import write_profile

        write_profile(cfg, children[0].events, steps[0])
    return TrainResult(
        workers=cfg.workers, throughput=cfg.batch_size * sum(counted) / window, steps=counted,
        duration_s=cfg.duration_s, arch=cfg.arch, mode=cfg.mode, overlap=cfg.overlap,
        bandwidth_bps=cfg.bandwidth_bps, model=cfg.label, batch_size=cfg.batch_size,
        ps_count=cfg.ps_count, window_s=window, loss_first=_mean(firsts), loss_last=_mean(lasts),
        param_change=summary["param_change"] if summary else None,
        throughput_intervals=cfg.batch_size * sum(rates),
        step_times_s=tuple(tuple(e["t"] for e in steps[r]) for r in range(cfg.workers)),
        events=tuple(tuple(c.events) for c in children) if cfg.trace else (),
        cpu_s=_cpu_seconds(children))


def _cpu_seconds(children: list[_Child]) -> tuple[float, ...]:
    out = []
    for c in children:
        last = next((e for e in reversed(c.events) if "cpu_s" in e or "cpu" in e), None)
        if last is not None:
            out.append(float(last.get("cpu_s", last.get("cpu"))))
    return tuple(out)


def _interval_rate(times: list[float], cfg: _Config) -> float:
    """Steps per second from the completions in the window and the last one before it (or t0)."""
    inside = [t for t in times if cfg.warmup_s < t <= cfg.duration_s]
    before = [0.0] + [t for t in times if t <= cfg.warmup_s]
    return len(inside) / (inside[-1] - before[-1]) if inside else 0.0


def _mean(values):
    return sum(values) / len(values) if values else None
