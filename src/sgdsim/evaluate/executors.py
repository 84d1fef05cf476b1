"""Where the points of a sweep run: one interface, three executors.

- ``Serial``: in this process (each simulated point still uses every core for its
  replications).
- ``LocalPool``: a process pool on every core (``--jobs N``); each process runs its
  replications on one thread, so N points run at once.
- ``DaskExecutor``: the same tasks on a Dask cluster (``--backend dask --scheduler ADDRESS``;
  the optional extra ``sgdsim[dask]``).

``map(fn, items, progress)`` returns results in the order of ``items``; ``fn`` and the items
must pickle (module-level functions, frozen dataclasses). Exceptions propagate unchanged:
deciding which of them mean "infeasible configuration" is the caller's business.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import ConfigError
from ..progress import Progress
from ..spec.registries import EXECUTORS



class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None) -> list[Any]: ...


class Serial:
    def map(self, fn, items, progress=None):
        out = []
        for item in items:
            out.append(fn(item))
            if progress:
                progress.advance()
        return out


def _one_thread() -> None:
    from .. import replicate

    replicate.MAX_THREADS = 1  # the pool's processes already fill the cores


class LocalPool:
    def __init__(self, jobs: int):
        self.jobs = jobs

    def map(self, fn, items, progress=None):
        if len(items) <= 1 or self.jobs <= 1:
            return Serial().map(fn, items, progress)
        from concurrent.futures import ProcessPoolExecutor, as_completed  # 20 ms: only for a pool

        out: list[Any] = [None] * len(items)
        with ProcessPoolExecutor(min(self.jobs, len(items)), initializer=_one_thread) as pool:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                out[futures[fut]] = fut.result()
                if progress:
                    progress.advance()
        return out


class DaskExecutor:
    """Tasks on a ``dask.distributed.Client`` (``connect`` makes one for a scheduler address)."""

    def __init__(self, client):
        self.client = client

    @classmethod
    def connect(cls, scheduler: str) -> DaskExecutor:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ConfigError("--backend dask needs the optional extra: pip install 'sgdsim[dask]'") from None
        try:
            return cls(Client(scheduler, timeout="10s"))
        except (OSError, TimeoutError) as e:
            raise ConfigError(f"cannot reach the Dask scheduler {scheduler!r} ({e})") from None

    def map(self, fn, items, progress=None):
        from dask.distributed import as_completed as dask_completed

        futures = self.client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(items)
        for fut in dask_completed(futures):
            out[index[fut.key]] = fut.result()
            if progress:
                progress.advance()
        return out


MAX_JOBS = 256  # local processes; beyond this a Dask cluster is the tool


def make_executor(backend: str = "local", jobs: int | None = None,
                  scheduler: str | None = None) -> Executor:
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise ConfigError(f"--jobs must be between 1 and {MAX_JOBS}, got {jobs}")
    return EXECUTORS[backend](jobs, scheduler)


def _local(jobs: int | None, scheduler: str | None) -> Executor:
    if scheduler:
        raise ConfigError("--scheduler applies to --backend dask")
    return LocalPool(jobs or os.cpu_count() or 1)


def _dask(jobs: int | None, scheduler: str | None) -> Executor:
    if jobs is not None:
        raise ConfigError("--jobs applies to --backend local (a Dask cluster has its own workers)")
    if not scheduler:
        raise ConfigError("--backend dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.1:8786)")
    return DaskExecutor.connect(scheduler)


for _name, _factory in (("local", _local), ("dask", _dask)):
    EXECUTORS.register(_name, _factory)
