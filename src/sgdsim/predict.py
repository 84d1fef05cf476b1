"""The Python API behind ``sgdsim predict``: result objects, not text."""
from __future__ import annotations

import os

from .analytic.coarse_profile import CoarseProfile, load_coarse, parse_coarse
from .errors import ConfigError, ProfileError
from .evaluate import evaluate
from .evaluate.executors import Executor
from .parse.keywords import specs as keywords_specs
from .parse.relevance import check_relevance
from .point import PredictionPoint
from .profile.io import load_profile
from .profile.model import Profile
from .spec import Cluster, Control, Job, Strategy
from .spec.limits import MAX_WORKERS
from .tagged_json import read_json


def parse_workers(spec: str | int | list[int]) -> list[int]:
    """'1-16' -> 1..16, '1,2,4,8' -> those, '4' -> [4]; at most MAX_WORKERS."""
    from .units import parse_number  # local: other functions of this file change in parallel

    if isinstance(spec, int):
        out = [spec]
    elif isinstance(spec, (list, tuple)):
        out = [parse_number(x, "worker count", lo=1, hi=MAX_WORKERS, integer=True)
               for x in spec]
    else:
        out = []
        for part in str(spec).split(","):
            out += _worker_range(part.strip(), spec)
    if not out or min(out) < 1:
        raise ConfigError(f"worker counts must be at least 1, got {spec!r}")
    if max(out) > MAX_WORKERS:
        raise ConfigError(f"at most {MAX_WORKERS:,} workers, got {max(out):,}")
    return sorted(set(out))


def _worker_range(part: str, spec) -> list[int]:
    from .units import is_whole_numeral, parse_number

    lo_s, dash, hi_s = part.partition("-")
    if not is_whole_numeral(lo_s) or (dash and not is_whole_numeral(hi_s)):  # ASCII: not '²'
        raise ConfigError(f"cannot parse worker counts {spec!r} (use e.g. 1-16, 1,2,4,8 or 4)")
    # bounded before any list is built: 1-99999999999999 must not eat the memory
    lo, hi = (parse_number(s, "worker count", lo=0, hi=MAX_WORKERS, integer=True)
              for s in (lo_s, hi_s if dash else lo_s))
    if hi < lo:
        raise ConfigError(f"empty worker range {part!r} in {spec!r}")
    return list(range(lo, hi + 1))


def parse_worker_profile(spec: str) -> tuple[str, str, int]:
    """'v100=prof.json:4' -> ('v100', 'prof.json', 4)."""
    from .units import is_whole_numeral, parse_number

    name, eq, rest = spec.partition("=")
    path, colon, count = rest.rpartition(":")
    if not eq or not colon or not name or not path:
        raise ConfigError(f"bad --worker-profile {spec!r} (expected CLASS=PROFILE.json:COUNT)")
    if not is_whole_numeral(count):  # ASCII digits only: '²' passes str.isdigit(), not int()
        raise ConfigError(f"bad worker count {count!r} in --worker-profile {spec!r} "
                          f"(1 to {MAX_WORKERS:,})")
    return name, path, parse_number(count, f"the worker count of --worker-profile {spec!r}",
                                    lo=1, hi=MAX_WORKERS, integer=True)


def load_any_profile(p) -> Profile | CoarseProfile:
    """A profile object, a fine profile file, or a coarse profile file (format sgdsim-coarse)."""
    if isinstance(p, (Profile, CoarseProfile)):
        return p
    if str(p).endswith(".json") and _json_format(p) == "sgdsim-coarse":
        return load_coarse(str(p))
    return load_profile(p)


def _json_format(path) -> str | None:
    try:
        with open(path, "rb") as f:
            if _COARSE_TAG not in f.read():
                return None  # not a coarse profile: parsed once, by load_profile
        data = read_json(path, "profile", ProfileError)
    except (OSError, ProfileError):
        return None  # load_profile reports the problem properly
    return data.get("format") if isinstance(data, dict) else None


_COARSE_TAG = b"sgdsim-coarse"  # a file without these bytes cannot carry that format


def predict(job: Job | Profile | CoarseProfile | str | os.PathLike | None = None,
            strategy: Strategy | None = None, cluster: Cluster | None = None,
            control: Control | None = None, *, workers="1-16", model: str = "fine",
            coarse: str | CoarseProfile | None = None,
            worker_profiles: list[tuple[str, Profile | str, int]] | None = None,
            executor: Executor | None = None, on_skip=None, hardware=None,
            **keywords) -> list[PredictionPoint]:
    """Predict throughput per worker count: ``predict(job, strategy, cluster, control,
    workers=...)`` with the four specs (``sgdsim.spec``), or ``predict(profile, **keywords)``,
    which only builds them (``parse/keywords.py`` documents every keyword: human units such as
    ``bandwidth="10Gbps"``, ``window="28MB"`` are accepted there). ``workers``: ``"1-16"``,
    ``"1,2,4"``, an int or a list. ``model``: "fine" (simulator), "coarse" (TPDS analytical
    models), "lin", "cynthia" (baselines) or "all" (every model that can honour the options;
    ``on_skip(reason)`` hears about the others). ``coarse``: a coarse profile
    (``"size=102MB,fwd=182ms,bwd=261ms,batch=128"`` or an object) instead of ``job``;
    ``worker_profiles`` (heterogeneous workers) replaces it too: one point. ``executor``: where
    the simulated points run (``evaluate.executors``; default: in this process). ``hardware``:
    a hardware file (its path or a ``Hardware``), as ``--hardware``: its network and measured
    dynamics for the strategy the keywords give, each keyword given overriding the file. A
    keyword the configuration would ignore is refused, as its option is (``parse/relevance.py``);
    a file's value that does not apply is not.
    """
    given = [s for s in (strategy, cluster, control) if s is not None]
    if given:
        if keywords or hardware is not None or len(given) < 3 or not isinstance(job, Job):
            raise ConfigError("give predict() a Job and its strategy, cluster and control, or a "
                              "profile and keywords (and hardware=), not a mix")
        return _evaluate(job, strategy, cluster, control, workers, model, executor, on_skip)
    check_relevance(keywords, model, heterogeneous=bool(worker_profiles))
    if hardware is not None:
        keywords = _with_hardware(hardware, keywords)
    return predict_with(_job(job, coarse, worker_profiles), keywords, workers=workers, model=model,
                        executor=executor, on_skip=on_skip)


def predict_with(job: Job | Profile | CoarseProfile | str | os.PathLike, keywords: dict, *,
                 workers="1-16", model: str = "fine", executor: Executor | None = None,
                 on_skip=None) -> list[PredictionPoint]:
    """The keyword form without the relevance check, for callers whose keywords are a hardware
    file's merged with their own (``validate``, ``calibrate``): a file's value the strategy
    ignores is not an error there."""
    strategy, cluster, control = keywords_specs(**keywords)
    job = job if isinstance(job, Job) else _job(job, None, None)
    return _evaluate(job, strategy, cluster, control, workers, model, executor, on_skip)


def _evaluate(job: Job, strategy, cluster, control, workers, model, executor, on_skip):
    counts = [] if job.heterogeneous else parse_workers(workers)
    return evaluate(job, strategy, cluster, counts, model, control, executor, on_skip)


def _with_hardware(hardware, keywords: dict) -> dict:
    """The keywords a hardware file gives the strategy in ``keywords``, then those given."""
    from .hardware import Hardware, load_hardware
    from .parse.hardware import hardware_keywords

    if not isinstance(hardware, (str, os.PathLike, Hardware)):
        raise ConfigError(f"hardware= takes a hardware file's path or a Hardware, got {type(hardware).__name__}")
    return hardware_keywords(hardware if isinstance(hardware, Hardware) else load_hardware(hardware), keywords)


def _job(profile, coarse, worker_profiles) -> Job:
    if worker_profiles:
        if profile is not None or coarse is not None:
            raise ConfigError("give either a profile or --worker-profile classes, not both")
        return Job.mixed([(n, load_any_profile(p), c) for n, p, c in worker_profiles])
    if coarse is not None:
        if profile is not None:
            raise ConfigError("give either a profile or --coarse, not both")
        return Job.of(coarse if isinstance(coarse, CoarseProfile) else parse_coarse(coarse))
    if profile is None:
        raise ConfigError("no profile given")
    return Job.of(load_any_profile(profile))


