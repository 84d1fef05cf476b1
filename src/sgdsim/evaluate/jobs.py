"""A job's profiles as each model reads them: the simulator fine profiles, the analytical
models coarse ones (``analytic/coarse_profile.py`` converts either way)."""
from __future__ import annotations

from ..analytic.coarse_profile import CoarseProfile, from_profile, to_profile
from ..profile.model import Profile
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
