"""The device's GEMM efficiency from one measured step (issue 37): the one number of the
catalogue that is an assumption (``devices.toml``), fitted so that the predicted step equals
a measured one, and written as a catalogue of the user's own (``--devices``)."""
from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from ..outputs import check_output_path
from .devices import FIELDS, OPTIONAL, Device
from .layout import Layout
from .model import Transformer
from .step import predict_step

LOW, HIGH = 0.02, 1.0
HALVINGS = 24  # (HIGH - LOW) / 2^24 < 1e-7: below the 6 decimals the catalogue keeps
STEPS = HALVINGS + 2  # predictions made, for a progress bar


def fit_gemm_efficiency(model: Transformer, layout: Layout, dev: Device, step_s: float,
                        progress=None) -> float:
    """The efficiency whose predicted step is ``step_s``: the step falls as the efficiency
    rises, so bisection. ``progress()`` is called after each of the ``STEPS`` predictions."""
    def step(eff: float) -> float:
        out = predict_step(model, layout, replace(dev, gemm_efficiency=eff)).step_s
        if progress:
            progress()
        return out

    fast, slow = step(HIGH), step(LOW)
    if not fast <= step_s <= slow:
        bound = "faster than the device's peak allows" if step_s < fast else "slower than 2 % of its peak"
        raise ConfigError(f"a measured step of {step_s:.3g} s is {bound} on this layout (the model "
                          f"gives {fast:.3g} s to {slow:.3g} s): check the layout, the device and the unit")
    lo, hi = LOW, HIGH
    for _ in range(HALVINGS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if step(mid) > step_s else (lo, mid)
    return (lo + hi) / 2


def write_catalogue(dev: Device, path: str, note: str, force: bool = False) -> None:
    """One device, as ``devices.toml`` holds it; never over a file the user has."""
    check_output_path(path, force)
    lines = [f"# {note}", f"[{dev.key}]"]
    for field in FIELDS + OPTIONAL:
        value = getattr(dev, field)
        if isinstance(value, dict):
            value = "{ " + ", ".join(f"{k} = {v!r}" for k, v in value.items()) + " }"
        elif isinstance(value, str):
            value = '"' + value.replace('"', "'") + '"'
        lines.append(f"{field} = {value}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
