"""A job's profiles as each model reads them: the simulator fine profiles, the analytical
models coarse ones (``analytic/coarse_profile.py`` converts either way)."""
from __future__ import annotations

from dataclasses import replace

from ..analytic.coarse_profile import CoarseProfile, from_profile, to_profile
from ..profile.model import Profile
from ..profile.transforms import without_overlap
from ..sim import WorkerClass
from ..spec import Job

AnyProfile = Profile | CoarseProfile


def fine_profile(p: AnyProfile) -> Profile:
    return to_profile(p) if isinstance(p, CoarseProfile) else p


def coarse_profile(p: AnyProfile) -> CoarseProfile:
    return p if isinstance(p, CoarseProfile) else from_profile(p)


def worker_classes(job: Job, workers: int) -> list[WorkerClass]:
    """The simulator's workers: the job's classes, or its one profile on ``workers`` workers."""
    if job.heterogeneous:
        return [WorkerClass(c.name, fine_profile(c.profile), c.count) for c in job.classes]
    c = job.classes[0]
    return [WorkerClass(c.name, fine_profile(c.profile), workers)]


def default_ps_count(job: Job) -> int:
    return max(c.profile.ps_count if isinstance(c.profile, Profile) else 1 for c in job.classes)


def as_strategy_runs(job: Job, overlap: bool) -> Job:
    """The job as the strategy runs it: with ``overlap`` False, every class's transfers wait
    for its step's compute (a coarse profile says so by its flag)."""
    if overlap:
        return job

    def serial(p: AnyProfile) -> AnyProfile:
        return replace(p, overlap=False) if isinstance(p, CoarseProfile) else without_overlap(p)
    return replace(job, classes=tuple(replace(c, profile=serial(c.profile)) for c in job.classes))
