"""The accelerator catalogue (``data/devices.toml``): devices a user may not own, each value
with its public source. A user's own TOML file of the same shape replaces it."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from ..errors import ConfigError

DEFAULT_DEVICE = "a100-80gb"
FIELDS = ("name", "peak_flops", "hbm_Bps", "hbm_GiB", "sms", "intra_Bps", "nic_Bps",
          "gpus_per_node", "gemm_efficiency", "source")
OPTIONAL = ("nics_per_node",)  # default: one NIC per GPU


@dataclass(frozen=True)
class Device:
    key: str
    name: str
    peak_flops: dict  # precision -> dense FLOP/s
    hbm_Bps: float
    hbm_GiB: float
    sms: int
    intra_Bps: float  # per GPU, per direction, inside a node
    nic_Bps: float  # per NIC, per direction, between nodes
    gpus_per_node: int
    gemm_efficiency: float
    source: str
    nics_per_node: int = 0  # 0: one per GPU

    def __post_init__(self):
        if not self.nics_per_node:
            object.__setattr__(self, "nics_per_node", self.gpus_per_node)

    @property
    def hbm_bytes(self) -> float:
        return self.hbm_GiB * (1 << 30)

    def peak(self, precision: str) -> float:
        if precision not in self.peak_flops:
            raise ConfigError(f"{self.key} has no {precision} peak in the catalogue (it has "
                              f"{', '.join(self.peak_flops)})")
        return float(self.peak_flops[precision])


def load_catalogue(path: str | None = None) -> dict[str, Device]:
    try:
        text = (open(path, encoding="utf-8").read() if path else
                (resources.files("sgdsim") / "data" / "devices.toml").read_text(encoding="utf-8"))
        raw = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: not a readable device catalogue ({e})") from None
    return {key: _device(key, entry, path) for key, entry in raw.items()}


def _device(key: str, entry, path) -> Device:
    missing = [f for f in FIELDS if f not in entry] if isinstance(entry, dict) else list(FIELDS)
    if missing:
        raise ConfigError(f"{path or 'devices.toml'}: device {key!r} lacks {', '.join(missing)}")
    if not isinstance(entry["peak_flops"], dict) or not entry["peak_flops"]:
        raise ConfigError(f"{path or 'devices.toml'}: device {key!r}: peak_flops must be a table of "
                          "precision = FLOP/s, e.g. { bf16 = 312e12 }")
    given = [f for f in OPTIONAL if f in entry]
    numbers = [entry[f] for f in FIELDS[2:-1] + tuple(given)] + list(entry["peak_flops"].values())
    if not all(isinstance(v, (int, float)) and v > 0 for v in numbers):
        raise ConfigError(f"{path or 'devices.toml'}: device {key!r} has a value that is not a positive number")
    if "nics_per_node" in entry and entry["nics_per_node"] != int(entry["nics_per_node"]):
        raise ConfigError(f"{path or 'devices.toml'}: device {key!r}: nics_per_node must be a whole number")
    return Device(key=key, **{f: entry[f] for f in FIELDS + tuple(given)})


def device(key: str | None = None, path: str | None = None) -> Device:
    """``key`` of the catalogue at ``path`` (default: the bundled one); None: ``DEFAULT_DEVICE``."""
    key = key or DEFAULT_DEVICE
    catalogue = load_catalogue(path)
    if key not in catalogue:
        raise ConfigError(f"unknown device {key!r}: one of {', '.join(catalogue)}")
    return catalogue[key]
