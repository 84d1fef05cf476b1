"""What ``sgdsim validate`` keeps when a run stops, and ``--resume``, which continues it.

A run writes points.csv and summary.md/.json after every point (one worker count of one
case), the summary recording the grid's ``fingerprint``. A point that fails stops the run with
``PointFailed`` (one line: the point, its cause, ``--resume``) after the finished points are
written; Ctrl-C writes them too. ``--resume`` reads them back: the points in points.csv are
kept, the others measured, and only an output folder of the same grid is continued.
"""
from __future__ import annotations

import contextlib
import json
import os

from ..errors import ConfigError, SgdsimError
from . import report
from .grid import Grid, file_sha256, fingerprint


class PointFailed(SgdsimError):
    """A point of the grid failed; the finished points are on disk. ``case``, ``workers``
    (None: the case's calibration failed) and ``cause`` (the error's own line) say which."""

    def __init__(self, message: str, case: str, workers: int | None, cause: str):
        super().__init__(message)
        self.case, self.workers, self.cause = case, workers, cause


def finished_runs(grid: Grid, targets: list[str], *, force: bool = False,
                  dry_run: bool = False) -> dict[tuple[str, int], list[float]] | None:
    """The runs of the points an earlier run of ``grid`` measured into the output folder of
    ``targets`` ({(case, workers): examples/s per run}), or None when it holds no earlier run.
    One ``ConfigError`` line when it holds another grid's, or one that cannot be told apart."""
    if force:
        raise ConfigError("--resume keeps the points of an earlier run and --force starts "
                          "afresh: give one of them")
    if dry_run:
        raise ConfigError("--resume continues measuring and --dry-run measures nothing: give "
                          "one of them")
    report.check_targets(targets, force=True)  # no folder where a file goes
    if not any(os.path.exists(t) for t in targets):
        return None
    outdir = os.path.dirname(targets[0]) or "."
    summary = _summary(os.path.join(outdir, "summary.json"))
    if summary.get("grid_sha256") is None:
        raise ConfigError(f"{outdir} holds files of a run that did not record its grid (no "
                          "summary.json with grid_sha256): nothing to resume; start afresh "
                          "with --force or write to another -o folder")
    if summary["grid_sha256"] != fingerprint(grid):
        raise ConfigError(f"{outdir} was made from another grid ({summary.get('grid')}, as it "
                          f"was then), not {grid.path}: --resume continues the same grid; "
                          "start afresh with --force or write to another -o folder")
    _check_inputs(summary.get("inputs_sha256") or {}, outdir)
    points = os.path.join(outdir, "points.csv")
    return report.measured_runs(points) if os.path.exists(points) else {}


def _check_inputs(recorded: dict, outdir: str) -> None:
    """A profile or hardware file edited since the stopped run: the kept points were predicted
    from the old one. A file gone since is fine (the run kept the profiles it used); a relative
    path is read from where the command runs, as the summary wrote it (``shown_path``)."""
    for path, sha in recorded.items():
        now = file_sha256(path) if isinstance(path, str) else None
        if now is not None and now != sha:
            raise ConfigError(f"{path} changed since the run in {outdir} stopped: its kept points "
                              "were predicted from the file as it was; start afresh with --force "
                              "or write to another -o folder")


def _summary(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return data if isinstance(data, dict) else {}


def saved_profiles(folder: str, fallback):
    """``profile_fn`` that loads ``folder/<case>.json`` (the profile a run used), else calls
    ``fallback(case)``: predictions made again are the ones the kept points were checked on."""

    def profile(case):
        path = os.path.join(folder, f"{case.name}.json")
        if os.path.exists(path):
            from ..profile.io import load_profile

            return load_profile(path)
        return fallback(case)

    return profile


@contextlib.contextmanager
def keeping_finished(result, outdir: str, case_result, log):
    """Around measuring ``case_result``: whatever stops it, the finished points, a plot per
    case and the summary are written first; an error then becomes one ``PointFailed`` line."""
    try:
        yield
    except SgdsimError as exc:
        report.write_all(result, outdir)
        raise _failed(result, outdir, case_result, exc) from None
    except BaseException:  # Ctrl-C or a bug: its own report follows, the points are kept
        report.write_all(result, outdir)
        log(f"kept {_kept(result, outdir)}; --resume measures the rest")
        raise


def _failed(result, outdir: str, cr, exc: Exception) -> PointFailed:
    cause = " ".join(str(exc).split("\n"))
    points = [(c.case.name, w) for c in result.cases for w in c.case.workers]
    todo = [w for w in cr.case.workers if w not in cr.measured_runs]
    if todo:
        where = (f"point {points.index((cr.case.name, todo[0])) + 1} of {len(points)} "
                 f"(case {cr.case.name!r}, {todo[0]} worker(s))")
    else:
        where = f"calibrating case {cr.case.name!r} on its measured points"
    return PointFailed(f"{where} failed: {cause}; kept {_kept(result, outdir)}; rerun with "
                       "--resume to measure the rest", cr.case.name, todo[0] if todo else None,
                       cause)


def _kept(result, outdir: str) -> str:
    done, total = report.point_counts(result)
    return (f"the {done} finished point(s) of {total} in {os.path.join(outdir, 'points.csv')} "
            f"and summary.md")
