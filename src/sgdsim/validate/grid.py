"""Validation grids: a TOML or JSON file listing the cases to measure and predict.

```toml
description = "what this grid is for"      # optional
[defaults]                                  # optional: keys every case inherits
model = "lab:mlp-20mb"
batch_size = 16
bandwidth = "100Mbps"
[[case]]
arch = "ps"
mode = "async"
workers = "1-4"
```

JSON: the same structure, ``{"description": ..., "defaults": {...}, "case": [{...}, ...]}``.
Every problem is one ``ConfigError`` line naming the file, the case and the key.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field

from ..spec import ARCHITECTURES, SHARINGS
from ..spec.registries import DEFAULT_ARCH
from ..calibrate_worker import calibration_workers
from ..errors import ConfigError
from ..predict import parse_workers
from ..units import format_bps, parse_bandwidth_bps, parse_duration_s, parse_size_bytes

TOP_KEYS = ("description", "defaults", "case")
REQUIRED = ("model", "batch_size", "bandwidth", "workers")
OPTIONAL = {"name": None, "arch": DEFAULT_ARCH, "mode": "async", "overlap": False, "duration": "30s",
            "warmup": "5s", "sharing": None, "predict_bandwidth": None, "profile": None,
            "profile_steps": 20, "hardware": None, "repeats": 1, "replications": "auto",
            "calibrate": False, "ps_count": 1, "tcp_dynamics": None, "trainer": "lab",
            "pilot": None, "bucket_size": None}
KEYS = REQUIRED + tuple(OPTIONAL)
LAB_PREFIX = "lab:"
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Case:
    """One configuration: profiled once, predicted by every model, measured per worker count.

    Units: bits/s and seconds. ``predict_bandwidth_bps`` is the bandwidth given to the models
    (else the ``hardware`` file's measured bandwidth, else the lab's link rate ``bandwidth_bps``). ``profile`` is a
    saved profile to use instead of profiling (absolute, or resolved against the grid's folder).
    """

    name: str
    model: str
    batch_size: int
    bandwidth_bps: float
    workers: tuple[int, ...]
    arch: str = DEFAULT_ARCH
    mode: str = "async"
    overlap: bool = False
    duration_s: float = 30.0
    warmup_s: float = 5.0
    sharing: str | None = None
    predict_bandwidth_bps: float | None = None
    profile: str | None = None
    profile_steps: int = 20
    hardware: str | None = None   # a netbench hardware file: bandwidth, β and fcfs_weight
    repeats: int = 1              # lab runs per worker count (their mean is the measurement)
    replications: int | None = None  # independent simulator runs per point (fine); None: auto
    calibrate: bool = False       # fit the hardware to the measured 1-worker (2-rank) step first
    ps_count: int = 1             # parameter servers (arch ps): the lab shards layers as predict does
    tcp_dynamics: bool | None = None  # the file's TCP dynamics: None the default, True + stalls, False none
    trainer: str = "lab"          # the lab's implementation: "lab" (fitted on) or "torch" (held out)
    pilot: tuple[int, ...] | None = None  # calibrate on these worker counts jointly (calibrate_pilot)
    bucket_size_bytes: float | None = None  # DDP's gradient buckets in the models (None: a call per layer)
    hardware_spec: object = field(default=None, repr=False, compare=False)  # the file, loaded

    @property
    def is_lab_model(self) -> bool:
        return self.model.startswith(LAB_PREFIX)

    @property
    def model_bandwidth_bps(self) -> float:
        return self.network()["bandwidth"]

    def network(self) -> dict:
        """``predict`` keyword arguments for the network: the ``hardware`` file's measurements
        where there is one (bandwidth, β, calibrated α, FCFS weight, two-way penalty, run
        spread), else the lab's link rate and the papers' defaults; ``predict_bandwidth``
        overrides the bandwidth; ``ps_count`` when the case has several servers."""
        net = self.model_hardware().predict_kwargs(self.arch, self.mode, self.ps_count, self.sharing,
                                                   self.tcp_dynamics)
        return {**net, "bandwidth": self.predict_bandwidth_bps or net["bandwidth"],
                **({"ps_count": self.ps_count} if self.ps_count > 1 else {}),
                **({"bucket_size": self.bucket_size_bytes} if self.bucket_size_bytes is not None else {})}

    def model_hardware(self):
        """The ``hardware`` file, or the lab's nominal link rate when there is none."""
        from ..hardware import Hardware

        return self.hardware_spec or Hardware.nominal(self.predict_bandwidth_bps or self.bandwidth_bps)

    def describe(self) -> str:
        overlap = "overlap" if self.overlap else "no overlap"
        arch = self.arch + (f" ×{self.ps_count} PS" if self.ps_count > 1 else "")
        return (f"{self.model}, batch {self.batch_size}, {format_bps(self.bandwidth_bps)}, "
                f"{arch} {self.mode}, {overlap}, workers {_workers_text(self.workers)}, "
                f"runs of {self.duration_s:g} s ({self.warmup_s:g} s warm-up)"
                + (f" ×{self.repeats}" if self.repeats > 1 else "")
                + (f", DDP buckets of {self.bucket_size_bytes / 2**20:g} MiB" if self.bucket_size_bytes else "")
                + (f", {self.trainer} trainer" if self.trainer != "lab" else ""))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["workers"] = list(self.workers)
        del d["hardware_spec"]  # the path in ``hardware`` names it
        if d["bucket_size_bytes"] is None:
            del d["bucket_size_bytes"]  # grids from before the key keep their fingerprint
        return d


@dataclass(frozen=True)
class Grid:
    path: str
    description: str
    cases: tuple[Case, ...]


def fingerprint(grid: Grid) -> str:
    """A hash of what ``grid`` measures (every case's settings, in order): ``--resume`` uses it
    to refuse an output folder made from another grid. Its description, comments and layout
    do not count."""
    text = json.dumps([c.to_dict() for c in grid.cases], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def input_files(grid: Grid) -> dict[str, str]:
    """{path: sha256 of its contents} of the profile and hardware files the grid's cases name
    and that exist: ``--resume`` refuses to continue a run whose inputs were edited since."""
    out = {}
    for case in grid.cases:
        for path in (case.profile, case.hardware):
            if path and path not in out and (sha := file_sha256(path)) is not None:
                out[path] = sha
    return out


def file_sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def load_grid(path: str | os.PathLike) -> Grid:
    """Read and check a grid file (``.toml`` or ``.json``)."""
    path = os.fspath(path)
    data = _read(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a grid is a table of 'defaults' and 'case' entries")
    return parse_grid(data, path)


def parse_grid(data: dict, path: str = "<grid>") -> Grid:
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"{path}: unknown top-level key {key!r} (known: {', '.join(TOP_KEYS)})")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{path}: 'defaults' must be a table")
    _check_keys(defaults, f"{path}: [defaults]")
    raw_cases = data.get("case")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise ConfigError(f"{path}: no cases (add [[case]] tables, or a JSON list 'case')")
    base = os.path.dirname(os.path.abspath(path)) if path != "<grid>" else os.getcwd()
    cases = [_case({**defaults, **_table(raw, path, i)}, f"{path}: case {i}", base)
             for i, raw in enumerate(raw_cases, 1)]
    _check_unique(cases, path)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{path}: 'description' must be a string")
    return Grid(path=path, description=description, cases=tuple(cases))


def _read(path: str):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read grid {path}: {exc.strerror or exc}") from None
    try:
        if path.endswith(".json"):
            return json.loads(raw.decode("utf-8"))
        return tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # TOMLDecodeError, JSONDecodeError too
        kind = "JSON" if path.endswith(".json") else "TOML"
        why = "nested too deep" if isinstance(exc, RecursionError) else exc
        raise ConfigError(f"{path}: not valid {kind}: {why}") from None


def _table(raw, path: str, i: int) -> dict:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: case {i} must be a table of keys, got {type(raw).__name__}")
    return raw


def _check_keys(d: dict, where: str) -> None:
    for key in d:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")


def _case(d: dict, where: str, base: str) -> Case:
    if isinstance(d.get("name"), str):
        where = f"{where} ({d['name']})"
    _check_keys(d, where)
    for key in REQUIRED:
        if key not in d:
            raise ConfigError(f"{where}: missing {key!r}")
    v = {**OPTIONAL, **d}
    try:
        case = _build(v, base)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return case


def _pilot(v: dict, workers, calibrate: bool, arch: str) -> tuple[int, ...] | None:
    """The worker counts to calibrate on jointly: two or more of ``workers``, from the
    smallest count a calibration can fit (2 ranks for an all-reduce)."""
    if v["pilot"] is None:
        return None
    pilot = _workers(v["pilot"])
    if len(pilot) < 2 or not set(pilot) <= set(workers) or not calibrate:
        raise ConfigError("'pilot' lists two or more of the case's 'workers' to calibrate on "
                          "jointly, with calibrate = true")
    if min(pilot) < calibration_workers(arch):
        raise ConfigError(f"'pilot': an {arch} pilot needs runs at {calibration_workers(arch)} or more "
                          f"workers (calibrate_pilot), not {min(pilot)}")
    return pilot


def _build(v: dict, base: str) -> Case:
    from ..lab.train.runner import ARCHS as LAB_ARCHS  # what the lab trains for real (imported
    from ..lab.train.trainers import TRAINERS, check_bucket, check_trainer  # late: a grid needs no lab)

    arch = _choice(v, "arch", LAB_ARCHS)
    mode = _choice(v, "mode", ("async", "sync"))
    spec = ARCHITECTURES[arch]  # the registry says what each one allows, not a name test here
    if mode not in spec.modes:  # of the lab's two, only all-reduce lacks a mode (async)
        raise ConfigError("ring all-reduce is synchronous: use mode = \"sync\" with arch = \"allreduce\"")
    model = _string(v, "model")
    if model == LAB_PREFIX:
        raise ConfigError(f"model {model!r} names no lab model (e.g. lab:mlp-20mb)")
    overlap, calibrate, dynamics = v["overlap"], v["calibrate"], v["tcp_dynamics"]
    for key, value in (("overlap", overlap), ("calibrate", calibrate), ("tcp_dynamics", dynamics)):
        if not isinstance(value, bool) and not (key == "tcp_dynamics" and value is None):
            raise ConfigError(f"{key!r} must be true or false, got {value!r}")
    workers = _workers(v["workers"])
    ps_count = _int(v, "ps_count", 1)
    if "ps_count" not in spec.options and ps_count > 1:
        raise ConfigError("'ps_count' applies to arch = \"ps\", not all-reduce")
    pilot = _pilot(v, workers, calibrate, arch)
    if calibrate and calibration_workers(arch) not in workers:
        raise ConfigError(f"'calibrate' needs the {calibration_workers(arch)}-worker point in "
                          f"'workers' (it is measured first and fitted)")
    trainer = _choice(v, "trainer", TRAINERS)
    check_trainer(trainer, arch, overlap, ps_count, None)
    bucket = None if v["bucket_size"] is None else _size(v, "bucket_size")
    check_bucket(trainer, arch, overlap, bucket)
    hw_path = None if v["hardware"] is None else os.path.join(base, _string(v, "hardware"))
    hardware_spec = _hardware(hw_path)
    case = Case(
        name=_name(v, model, arch, mode, overlap), model=model,
        batch_size=_int(v, "batch_size", 1), bandwidth_bps=_bandwidth(v, "bandwidth"),
        workers=workers, arch=arch, mode=mode, overlap=overlap,
        duration_s=_duration(v, "duration", positive=True), warmup_s=_duration(v, "warmup"),
        sharing=None if v["sharing"] is None else _choice(v, "sharing", SHARINGS.names),
        predict_bandwidth_bps=None if v["predict_bandwidth"] is None else _bandwidth(v, "predict_bandwidth"),
        profile=None if v["profile"] is None else os.path.join(base, _string(v, "profile")),
        profile_steps=_int(v, "profile_steps", 1),
        hardware=hw_path, hardware_spec=hardware_spec,
        repeats=_int(v, "repeats", 1),
        replications=None if v["replications"] == "auto" else _int(v, "replications", 1),
        calibrate=calibrate, ps_count=ps_count, tcp_dynamics=dynamics, trainer=trainer,
        pilot=pilot, bucket_size_bytes=bucket)
    return case


def _hardware(path: str | None):
    """The loaded hardware file: a bad one fails the grid now, not after the measurements."""
    if path is None:
        return None
    from ..errors import ProfileError
    from ..hardware import load_hardware

    try:
        return load_hardware(path)
    except ProfileError as exc:
        raise ConfigError(f"'hardware': {exc}") from None


def _workers(w) -> tuple[int, ...]:
    ok = isinstance(w, (str, int)) or (isinstance(w, list) and all(isinstance(x, int) for x in w))
    if isinstance(w, bool) or not ok or (isinstance(w, list) and any(isinstance(x, bool) for x in w)):
        raise ConfigError(f"'workers' must be a string like \"1-4\" or \"1,2,4\", a number or a "
                          f"list of numbers, got {w!r}")
    try:
        return tuple(parse_workers(w))
    except ConfigError as exc:
        raise ConfigError(f"'workers': {exc}") from None


def _name(v: dict, model: str, arch: str, mode: str, overlap: bool) -> str:
    if v["name"] is not None:
        name = _string(v, "name")
        if not _NAME.match(name):
            raise ConfigError(f"case name {name!r} may only use letters, digits, '.', '_' and '-'")
        return name
    short = re.sub(r"[^A-Za-z0-9._-]+", "-", model.removeprefix(LAB_PREFIX)).strip("-")
    return f"{short}-{arch}-{mode}-{'overlap' if overlap else 'nooverlap'}"


def _check_unique(cases: list[Case], path: str) -> None:
    seen: set[str] = set()
    for i, case in enumerate(cases, 1):
        if case.name in seen:
            raise ConfigError(f"{path}: case {i}: duplicate case name {case.name!r} "
                              f"(give the cases distinct 'name' keys)")
        seen.add(case.name)


def _choice(v: dict, key: str, choices: tuple[str, ...]) -> str:
    if v[key] not in choices:
        raise ConfigError(f"'{key}' must be one of {', '.join(choices)}, got {v[key]!r}")
    return v[key]


def _string(v: dict, key: str) -> str:
    if not isinstance(v[key], str) or not v[key]:
        raise ConfigError(f"'{key}' must be a non-empty string, got {v[key]!r}")
    return v[key]


def _int(v: dict, key: str, low: int) -> int:
    x = v[key]
    if isinstance(x, bool) or not isinstance(x, int) or x < low:
        raise ConfigError(f"'{key}' must be an integer >= {low}, got {x!r}")
    return x


def _quantity(v: dict, key: str, parse, like: str) -> float:
    """A human quantity at the grid's edge ("100Mbps", "25MiB", "20s"), the key named on error."""
    if isinstance(v[key], bool):
        raise ConfigError(f"'{key}' must be a {like}, got {v[key]!r}")
    try:
        return parse(v[key])
    except ConfigError as exc:
        raise ConfigError(f"'{key}': {exc}") from None


def _bandwidth(v: dict, key: str) -> float:
    return _quantity(v, key, parse_bandwidth_bps, 'bandwidth like "100Mbps"')


def _size(v: dict, key: str) -> float:
    return _quantity(v, key, parse_size_bytes, 'size like "25MiB"')


def _duration(v: dict, key: str, positive: bool = False) -> float:
    s = _quantity(v, key, parse_duration_s, 'duration like "20s"')
    if positive and not s > 0:
        raise ConfigError(f"'{key}' must be positive, got {v[key]!r}")
    return s


def _workers_text(workers: tuple[int, ...]) -> str:
    w = list(workers)
    if len(w) > 2 and w == list(range(w[0], w[-1] + 1)):
        return f"{w[0]}-{w[-1]}"
    return ",".join(map(str, w))
