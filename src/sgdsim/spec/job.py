"""What is trained: one profile swept over worker counts, or fixed classes of workers.

A profile is the profile layer's object (a fine ``Profile`` or a ``CoarseProfile``); the spec
holds it as data. Turning one kind into the other is the models' business
(``evaluate/jobs.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


@dataclass(frozen=True)
class JobClass:
    name: str
    profile: Any
    count: int = 1

    def __post_init__(self):
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ConfigError(f"worker class {self.name!r}: count must be at least 1, got {self.count}")


@dataclass(frozen=True)
class Job:
    """One profile swept over worker counts, or fixed heterogeneous classes (one point)."""

    classes: tuple[JobClass, ...]
    heterogeneous: bool = False

    def __post_init__(self):
        if not self.classes:
            raise ConfigError("no worker classes given")

    @classmethod
    def of(cls, profile: Any) -> Job:
        return cls((JobClass("default", profile),))

    @classmethod
    def mixed(cls, classes: list[tuple[str, Any, int]]) -> Job:
        if not classes:
            raise ConfigError("no worker classes given")
        return cls(tuple(JobClass(n, p, c) for n, p, c in classes), heterogeneous=True)

    @property
    def profile(self) -> Any:
        return self.classes[0].profile

    @property
    def workers(self) -> int:
        return sum(c.count for c in self.classes)
