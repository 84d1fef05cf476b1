"""sgdsim: predict distributed SGD throughput from a one-worker profile.

Python API mirroring the CLI::

    import sgdsim
    points = sgdsim.predict("examples/profiles/resnet50.json", workers="1-16", bandwidth="10Gbps")
    for p in points:
        print(p.workers, p.throughput, p.bottleneck)
"""
from typing import TYPE_CHECKING

from .errors import ConfigError, ProfileError, SgdsimError  # noqa: F401
from .predict import PredictionPoint, parse_workers, predict  # noqa: F401
from .profile.io import load_profile, save_profile  # noqa: F401
from .profile.model import Job, Op, Profile  # noqa: F401
from .lazy import lazy_exports

__version__ = "0.1.0"
__getattr__ = lazy_exports(__name__, {"import_pipedream": ".profile.pipedream"})  # not needed to predict

if TYPE_CHECKING:
    from .profile.pipedream import import_pipedream  # noqa: F401
