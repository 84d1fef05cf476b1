"""Large models (issue 37): transformers described by their shape, laid out over tensor,
pipeline and data parallelism on a catalogue device; step time, memory and MFU.

The device catalogue and the step model are imported on first use (``sgdsim/lazy.py``): a
command that only asks ``is_description`` does not load them."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .layout import Layout, parse_layout  # noqa: F401
from .memory import Memory, memory  # noqa: F401
from .model import Transformer, is_description, load_transformer, parse_gpt  # noqa: F401

__getattr__ = lazy_exports(__name__, {
    "Device": ".devices", "device": ".devices", "load_catalogue": ".devices",
    "StepPrediction": ".step", "predict_step": ".step",
})

if TYPE_CHECKING:
    from .devices import Device, device, load_catalogue  # noqa: F401
    from .step import StepPrediction, predict_step  # noqa: F401
