"""The fine-grained simulator: kernel, links and sharing policies, stream schedulers, engine."""
from .config import SimConfig, WorkerClass  # noqa: F401
from .simulate import SimResult, Timeline, simulate  # noqa: F401
