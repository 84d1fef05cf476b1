"""Reading and writing profile files (JSON, optionally gzip), with full validation.

Every problem is reported as one ``ProfileError`` line naming the file, the op and the field,
so a user can fix a hand-written or converted profile without reading a traceback.
The format is specified in docs/profile-format.md.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
import zlib
from pathlib import Path


from ..tagged_json import parse_json
from ..errors import ProfileError
from .model import COMM, FORMAT_NAME, Op, Profile
from .parse import SUPPORTED_VERSIONS, UNITS, profile_from_dict  # noqa: F401 - re-exported

_GZIP_MAGIC = b"\x1f\x8b"


# ----------------------------------------------------------------------------- public API

def load_profile(path: str | os.PathLike) -> Profile:
    """Read and validate a profile file (gzip when named ``*.gz`` or gzip-compressed)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ProfileError(f"profile {name}: cannot read file ({exc.strerror or exc})") from None
    if raw[:2] == _GZIP_MAGIC or name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ProfileError(f"profile {name}: not a valid gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8-sig")  # tolerate a BOM from Windows editors
    except UnicodeDecodeError:
        raise ProfileError(f"profile {name}: not UTF-8 text") from None
    return profile_from_dict(parse_json(text, f"profile {name}", ProfileError), name)


def save_profile(profile: Profile, path: str | os.PathLike, overwrite: bool = False) -> None:
    """Validate ``profile`` and write it atomically (gzip when ``path`` ends with ``.gz``)."""
    name = str(path)
    if os.path.exists(name) and not overwrite:
        raise ProfileError(f"{path} exists; refusing to overwrite (use --force)")
    data = profile_to_dict(profile)
    profile_from_dict(data, name)  # never write a file that load_profile would reject
    payload = _dumps(data).encode("utf-8")
    if name.endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)  # mtime=0: identical input, identical bytes
    _write_atomic(name, payload)


def validate_profile(profile: Profile, source_name: str = "<profile>") -> Profile:
    """Check an in-memory profile against the file rules; returns it unchanged."""
    profile_from_dict(profile_to_dict(profile), source_name)
    return profile


def profile_to_dict(profile: Profile) -> dict:
    """The JSON-ready dictionary of the file format (version 1)."""
    job = profile.job
    out = {
        "format": FORMAT_NAME,
        "version": profile.version,
        "job": {"model": job.model, "batch_size": job.batch_size, "framework": job.framework,
                "device": job.device, "bandwidth_bps": job.bandwidth_bps,
                "overlap": job.overlap, "source": job.source, "units": dict(UNITS)},
        "ops": [_op_to_dict(op) for op in profile.ops],
        "steps": _steps_to_list(profile),
    }
    for key, value in profile.extra.items():
        out.setdefault(key, value)
    return out


# ----------------------------------------------------------------------------- writing

def _op_to_dict(op: Op) -> dict:
    out = {"id": op.id, "name": op.name, "layer": op.layer, "kind": op.kind,
           "resource": op.resource, "ps": op.ps}
    if op.kind == COMM:
        out["size_bytes"] = _compact(op.size_bytes)
    out["deps"] = list(op.deps)
    return out


def _steps_to_list(profile: Profile) -> list[dict]:
    for label, array in (("durations_s", profile.durations_s), ("comm_s", profile.comm_s)):
        if array is not None and (array.ndim != 2 or array.shape[1] != profile.n_ops):
            raise ProfileError(f"profile: {label} has shape {array.shape}, expected "
                               f"(steps, {profile.n_ops})")
    compute = [(i, op.id) for i, op in enumerate(profile.ops) if op.kind != COMM]
    comm = [(i, op.id) for i, op in enumerate(profile.ops) if op.kind == COMM]
    steps = []
    for s in range(profile.n_steps):
        step = {"duration_s": {op_id: float(profile.durations_s[s, i]) for i, op_id in compute}}
        if profile.comm_s is not None:
            # Always written (possibly empty) so that a profile with comm_s keeps it on reload.
            step["comm_s"] = {op_id: float(profile.comm_s[s, i]) for i, op_id in comm
                              if not math.isnan(profile.comm_s[s, i])}
        steps.append(step)
    return steps


def _compact(x: float) -> float | int:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def _dumps(data: dict) -> str:
    """JSON with one op and one step per line: diffable, and still compact for big DAGs."""
    def one(value) -> str:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)

    lines = ["{"]
    items = list(data.items())
    for k, (key, value) in enumerate(items):
        comma = "," if k < len(items) - 1 else ""
        if key in ("ops", "steps") and isinstance(value, list) and value:
            inner = ",\n".join(f"    {one(v)}" for v in value)
            lines.append(f"  {one(key)}: [\n{inner}\n  ]{comma}")
        else:
            lines.append(f"  {one(key)}: {one(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write_atomic(name: str, payload: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(name))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(name)}.",
                                   suffix=".tmp")
    except OSError as exc:
        raise ProfileError(f"cannot write {name}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _target_mode(name))
        os.replace(tmp, name)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ProfileError(f"cannot write {name}: {exc.strerror or exc}") from None
        raise


def _target_mode(name: str) -> int:
    # mkstemp creates 0600; a profile is not a secret, and an overwritten file keeps its mode.
    try:
        return os.stat(name).st_mode & 0o777
    except OSError:
        return 0o644
