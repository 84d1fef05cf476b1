"""``sgdsim lab run``: one lab for all worker counts, one measured run per count, a table.

The lab is sized for the largest count (W+1 hosts) and reused by every run; a lab already up
(``sgdsim lab up``) is used instead when it has enough hosts at the requested bandwidth, and
left up. Rows are printed as the runs finish, since each takes the whole --duration.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys

from ...errors import ConfigError
from ...units import format_bps, parse_bandwidth_bps
from ..cluster import LabCluster, list_namespaces, read_state

COLUMNS = ("workers", "throughput", "throughput_intervals", "steps", "step_time_s",
           "loss_first", "loss_last", "param_change")


def run_command(args, workers: list[int]) -> int:
    from .runner import check_config, require_lab, run_training

    bandwidth = parse_bandwidth_bps(args.bandwidth)
    record, final = _record_target(args, workers)
    base_hw = _check_calibration(args, workers)
    require_lab()
    cfgs = [check_config(args.model, w, args.batch_size, bandwidth, args.arch, args.mode,
                         args.overlap, args.duration, args.warmup, record, args.ps_count)
            for w in workers]  # every bad option fails here, before any lab exists
    results = []
    with _lab(max(c.hosts for c in cfgs), bandwidth) as lab:
        for w in workers:
            r = run_training(args.model, w, args.batch_size, bandwidth, args.arch, args.mode,
                             args.overlap, args.duration, args.warmup, lab=lab,
                             record_profile=record, ps_count=args.ps_count)
            if not results:
                _header(args.format)  # after the first run: an error prints alone
            results.append(r)
            _row(r, args.format)
    if record and final != record:
        os.replace(record, final)
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=1))
    if record:
        print(f"wrote {final}", file=sys.stderr)
    if base_hw is not None:
        calibrate_from_run(results[0], base_hw, args.calibrated_output, args.force)
    return 0


def _check_calibration(args, workers: list[int]):
    """The hardware file --calibrate starts from, checked (with its output) before any run."""
    if args.calibrate is None:
        if args.calibrated_output is not None:
            raise ConfigError("-o/--calibrated-output goes with --calibrate HW.json")
        return None
    from ...outputs import check_output_path
    from ...calibrate_worker import calibration_workers
    from ...hardware import load_hardware

    need = calibration_workers(args.arch)
    if workers != [need]:
        raise ConfigError(f"--calibrate fits one run of {need} worker(s) for --arch {args.arch}: "
                          f"use --workers {need}")
    if args.calibrated_output is None:
        raise ConfigError("--calibrate needs -o OUT.json for the calibrated hardware file")
    check_output_path(args.calibrated_output, args.force)
    return load_hardware(args.calibrate)


def calibrate_from_run(result, hw, output: str, force: bool = False, profile=None):
    """``sgdsim calibrate`` on a lab run: its step time against the model's standalone profile
    (``profile_lab_model`` for lab: models, ``sgdsim profile`` otherwise) -> ``output``."""
    from ...calibrate_worker import calibrate, summary
    from ...hardware import save_hardware

    if profile is None:
        from .timing import standalone_profile

        profile = standalone_profile(result.model, result.batch_size, result.overlap)
    step_s = result.workers * result.batch_size / result.throughput_intervals
    out = calibrate(profile, step_s, hw, result.arch, result.mode,
                    result.ps_count if result.ps_count > 1 else None)
    save_hardware(out, output, force=force)
    print(f"calibrated: {summary(out, result.arch)}; wrote {output}", file=sys.stderr)
    return out


def _record_target(args, workers: list[int]) -> tuple[str | None, str | None]:
    """With --force, record next to the target and replace it only once the run succeeded."""
    path = args.record_profile
    if path is None:
        return None, None
    if workers != [1]:
        raise ConfigError("--record-profile records one worker and one PS: use --workers 1")
    if os.path.exists(path) and args.force:
        return f"{path}.partial-{os.getpid()}", path
    return path, path


def _lab(hosts: int, bandwidth: float):
    st = read_state()
    if st and st.get("complete") and set(st["namespaces"]) <= set(list_namespaces("")):
        lab = LabCluster.attach()
        if lab.hosts < hosts or abs(lab.bandwidth_bps - bandwidth) > 1e-6 * bandwidth:
            raise ConfigError(f"a lab is up ({lab.hosts} hosts at {format_bps(lab.bandwidth_bps)}"
                              f"); this run needs {hosts} hosts at {format_bps(bandwidth)}: "
                              f"'sgdsim lab down' first, or match it")
        print(f"lab run: using the lab that is up ({lab.describe()})", file=sys.stderr)
        return contextlib.nullcontext(lab)
    return LabCluster(hosts, bandwidth)


def _values(r) -> dict:
    return {"workers": r.workers, "throughput": r.throughput,
            "throughput_intervals": r.throughput_intervals,
            "steps": "/".join(map(str, r.steps)),
            "step_time_s": (r.workers * r.batch_size / r.throughput_intervals
                            if r.throughput_intervals else float("nan")),
            "loss_first": r.loss_first, "loss_last": r.loss_last, "param_change": r.param_change}


def _header(fmt: str) -> None:
    if fmt == "csv":
        print(",".join(COLUMNS), flush=True)
    elif fmt == "table":
        print(f"{'workers':>7}  {'examples/s':>10}  {'(intervals)':>11}  {'steps/worker':>14}  "
              f"{'step time':>10}  {'loss':>13}  {'Δθ/θ':>8}", flush=True)


def _row(r, fmt: str) -> None:
    v = _values(r)
    if fmt == "csv":
        print(",".join("" if v[c] is None else str(v[c]) for c in COLUMNS), flush=True)
    elif fmt == "table":
        loss = (f"{v['loss_first']:.3f}→{v['loss_last']:.3f}" if v["loss_first"] is not None
                else "-")
        change = f"{v['param_change']:.2e}" if v["param_change"] is not None else "-"
        print(f"{r.workers:7d}  {r.throughput:10.1f}  {r.throughput_intervals:11.1f}  "
              f"{v['steps']:>14}  "
              f"{v['step_time_s'] * 1e3:8.0f}ms  {loss:>13}  {change:>8}", flush=True)
