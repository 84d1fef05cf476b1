"""Large models (issue 37): transformers described by their shape, laid out over tensor,
pipeline and data parallelism on a catalogue device; step time, memory and MFU."""
from .devices import Device, device, load_catalogue  # noqa: F401
from .layout import Layout, parse_layout  # noqa: F401
from .memory import Memory, memory  # noqa: F401
from .model import Transformer, is_description, load_transformer, parse_gpt  # noqa: F401
from .step import StepPrediction, predict_step  # noqa: F401
