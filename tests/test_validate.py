"""``sgdsim validate``: grid parsing and its one-line errors, a full run with a fake profiler and
a fake lab (measured = fine prediction × 1.1, so every error is known exactly), the outputs,
the overwrite guard, and --dry-run. Nothing here needs torch, root or the lab."""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from sgdsim.analytic.coarse_profile import parse_coarse, to_profile
from sgdsim.errors import ConfigError
from sgdsim.evaluate.margin import MODEL_ERROR_REL, coverage, run_score
from sgdsim.profile.io import save_profile
from sgdsim.validate import load_grid, parse_models, predict_case, run_validation
from sgdsim.validate.cli import cmd_validate, main, register
from conftest import LAB_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
GRIDS = ROOT / "examples" / "grids"
PROFILE = parse_coarse("size=2MB,fwd=20ms,bwd=40ms,batch=16")
FACTOR = 1.1
GRID = f"""
description = "test grid"
{LAB_DEFAULTS}[[case]]
name = "async"
workers = "1-3"
[[case]]
name = "ring"
arch = "allreduce"
mode = "sync"
overlap = true
workers = [2, 4]
"""


def write(tmp_path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def grid_error(tmp_path, text: str, name: str = "grid.toml") -> str:
    with pytest.raises(ConfigError) as exc:
        load_grid(write(tmp_path, text, name))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


class FakeLab:
    """Records how the run uses the lab: one per case, the same one for every worker count."""

    def __init__(self):
        self.opened, self.calls = [], []

    def open(self, case):
        self.opened.append(case.name)
        return contextlib.nullcontext(f"lab-{case.name}")

    def measure(self, case, workers, lab):
        self.calls.append((case.name, workers, lab))
        fine = {p.workers: p.predicted for p in predict_case(case, PROFILE, ("fine",))[0]}
        return FACTOR * fine[workers]


def run(tmp_path, grid_text=GRID, **kw):
    lab = FakeLab()
    kw.setdefault("profile_fn", lambda case: PROFILE)
    result = run_validation(load_grid(write(tmp_path, grid_text)), str(tmp_path / "out"),
                            measure_fn=lab.measure, lab_fn=lab.open, log=lambda m: None, **kw)
    return result, lab


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------- grids

def test_example_grids_parse():
    small = load_grid(GRIDS / "lab-small.toml")
    assert len(small.cases) == 6 and len({c.name for c in small.cases}) == 6
    for c in small.cases:
        assert (c.model, c.batch_size, c.bandwidth_bps) == ("lab:mlp-20mb", 16, 1e8)
        assert (c.duration_s, c.warmup_s) == (20.0, 5.0)
        assert c.workers == ((2, 3, 4) if c.arch == "allreduce" else (1, 2, 3, 4))
        assert c.is_lab_model
    assert {(c.arch, c.mode, c.overlap) for c in small.cases} >= {
        ("ps", "async", False), ("ps", "async", True), ("ps", "sync", False),
        ("ps", "sync", True), ("allreduce", "sync", False)}
    smoke = load_grid(GRIDS / "smoke.toml")
    assert len(smoke.cases) == 1 and smoke.cases[0].workers == (1, 2)


def test_defaults_inherited_and_case_overrides(tmp_path):
    g = load_grid(write(tmp_path, GRID))
    a, r = g.cases
    assert (a.arch, a.mode, a.overlap, a.workers, a.duration_s) == ("ps", "async", False, (1, 2, 3), 3.0)
    assert (r.arch, r.mode, r.overlap, r.workers) == ("allreduce", "sync", True, (2, 4))
    assert a.model_bandwidth_bps == 1e8 and g.description == "test grid"


def test_json_grid_and_default_names(tmp_path):
    data = {"case": [{"model": "zoo:mlp", "batch_size": 8, "bandwidth": "1Gbps", "workers": 2,
                      "overlap": True, "predict_bandwidth": "956Mbps"}]}
    g = load_grid(write(tmp_path, json.dumps(data), "grid.json"))
    c = g.cases[0]
    assert c.name == "zoo-mlp-ps-async-overlap" and not c.is_lab_model
    assert c.workers == (2,) and c.model_bandwidth_bps == pytest.approx(956e6)


def test_unknown_key_names_it(tmp_path):
    msg = grid_error(tmp_path, GRID.replace('duration = "3s"', 'duraton = "3s"'))
    assert "'duraton'" in msg and "[defaults]" in msg and "grid.toml" in msg
    msg = grid_error(tmp_path, GRID + 'bandwith = "1Gbps"\n')
    assert "'bandwith'" in msg and "case 2 (ring)" in msg
    assert "'cases'" in grid_error(tmp_path, '[[cases]]\nmodel = "x"\n')


@pytest.mark.parametrize("bad, words", [
    ('bandwidth = "100Mbs"', ["'bandwidth'", "unit", "100Mbs"]),
    ('bandwidth = "fast"', ["'bandwidth'", "fast"]),
    ('bandwidth = true', ["'bandwidth'"]),
    ('duration = "20 parsecs"', ["'duration'", "parsecs"]),
    ('duration = "0s"', ["'duration'", "positive"]),
])
def test_bad_units(tmp_path, bad, words):
    key = bad.split(" =")[0]
    text = "\n".join(bad if line.startswith(key + " =") else line for line in GRID.splitlines())
    msg = grid_error(tmp_path, text)
    assert all(w in msg for w in words), msg


@pytest.mark.parametrize("spec", ['"1-x"', '"4-1"', '"0-2"', '""', "true", '[1, "two"]', "1.5"])
def test_bad_workers(tmp_path, spec):
    msg = grid_error(tmp_path, GRID.replace('workers = "1-3"', f"workers = {spec}"))
    assert "case 1 (async)" in msg and "worker" in msg


@pytest.mark.parametrize("text, words", [
    (GRID.replace('batch_size = 16\n', ''), ["missing 'batch_size'", "case 1"]),
    (GRID.replace('batch_size = 16', 'batch_size = 0'), ["'batch_size'", ">= 1"]),
    (GRID.replace('mode = "sync"', 'mode = "async"'), ["all-reduce is synchronous", "case 2"]),
    (GRID.replace('arch = "allreduce"', 'arch = "ring"'), ["'arch'", "ring"]),
    (GRID.replace('overlap = true', 'overlap = "yes"'), ["'overlap'", "true or false"]),
    (GRID.replace('name = "ring"', 'name = "async"'), ["duplicate case name 'async'"]),
    (GRID.replace('name = "ring"', 'name = "a/b"'), ["case name 'a/b'"]),
    ("[defaults]\nmodel = 'x'\n", ["no cases"]),
    ("[[case]\n", ["not valid TOML"]),
])
def test_malformed_grids(tmp_path, text, words):
    msg = grid_error(tmp_path, text)
    assert all(w in msg for w in words), msg


def test_missing_grid_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read grid"):
        load_grid(tmp_path / "nope.toml")


def test_cli_malformed_grid_is_one_line_exit_2(tmp_path, capsys):
    path = write(tmp_path, GRID.replace('workers = "1-3"', 'wrokers = "1-3"'))
    rc = main(["validate", str(path), "-o", str(tmp_path / "out"), "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("sgdsim: error:") and "'wrokers'" in err
    assert not (tmp_path / "out").exists()


def test_parse_models():
    assert parse_models("all") == ("fine", "coarse", "lin", "cynthia")
    assert parse_models("lin,fine") == ("fine", "lin")
    with pytest.raises(ConfigError, match="'bogus'"):
        parse_models("fine,bogus")


# ----------------------------------------------------------------------------- full run

def test_full_run_points_csv(tmp_path):
    result, lab = run(tmp_path)
    rows = read_csv(tmp_path / "out" / "points.csv")
    assert list(rows[0]) == ["case", "model", "workers", "measured", "predicted", "error_pct",
                            "measured_runs", "interval_low", "interval_high", "fitted"]
    keys = {(r["case"], r["model"], int(r["workers"])) for r in rows}
    expect = {("async", m, w) for m in ("fine", "coarse", "lin", "cynthia") for w in (1, 2, 3)}
    expect |= {("ring", m, w) for m in ("fine", "coarse") for w in (2, 4)}
    assert keys == expect and len(rows) == len(expect)
    for r in rows:
        measured, predicted, err = float(r["measured"]), float(r["predicted"]), float(r["error_pct"])
        assert err == pytest.approx(100 * (predicted / measured - 1), rel=1e-8)
        if r["model"] == "fine":
            assert measured == pytest.approx(FACTOR * predicted, rel=1e-9)
            assert err == pytest.approx(100 * (1 / FACTOR - 1), rel=1e-8)
            assert float(r["interval_low"]) <= predicted <= float(r["interval_high"])
        else:
            assert r["interval_low"] == r["interval_high"] == ""
    # one lab per case, sized once and reused for every worker count, measured in order
    assert lab.opened == ["async", "ring"]
    assert [(c, w, l) for c, w, l in lab.calls] == [
        ("async", 1, "lab-async"), ("async", 2, "lab-async"), ("async", 3, "lab-async"),
        ("ring", 2, "lab-ring"), ("ring", 4, "lab-ring")]


def test_full_run_summary(tmp_path, capsys):
    result, _ = run(tmp_path)
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    fine_err = 100 * abs(1 / FACTOR - 1)
    assert summary["format"] == "sgdsim-validation-summary" and summary["dry_run"] is False
    fine = summary["overall"]["fine"]
    assert fine["points"] == 5
    assert fine["mean_abs_error_pct"] == pytest.approx(fine_err) == fine["max_abs_error_pct"]
    rows = read_csv(out / "points.csv")
    for case in summary["cases"]:
        for model, stats in case["errors"].items():
            errs = [abs(float(r["error_pct"])) for r in rows if (r["case"], r["model"]) == (case["name"], model)]
            assert stats["points"] == len(errs)
            assert stats["mean_abs_error_pct"] == pytest.approx(sum(errs) / len(errs))
            assert stats["max_abs_error_pct"] == pytest.approx(max(errs))
    coarse_all = [abs(float(r["error_pct"])) for r in rows if r["model"] == "coarse"]
    assert summary["overall"]["coarse"]["max_abs_error_pct"] == pytest.approx(max(coarse_all))
    ring = summary["cases"][1]
    assert any("lin" in s for s in ring["skipped"]) and any("cynthia" in s for s in ring["skipped"])
    assert ring["points"][0]["measured"] == pytest.approx(FACTOR * ring["points"][0]["predicted"]["fine"])
    md = (out / "summary.md").read_text()
    assert "## Overall" in md and f"| fine | 5 | {fine_err:.1f} % | {fine_err:.1f} % |" in md
    assert "plots/ring.png" in md and "cannot honour" in md


def test_full_run_plots_and_profiles(tmp_path):
    result, _ = run(tmp_path)
    for name in ("async", "ring"):
        png = tmp_path / "out" / "plots" / f"{name}.png"
        assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "out" / "profiles" / f"{name}.json").stat().st_size > 0
    assert sorted(Path(f).name for f in result.files) == sorted(
        ["points.csv", "summary.md", "summary.json", "bias_by_workers.png", "async.png", "ring.png",
         "async.json", "ring.json"])


def test_plot_draws_the_fine_interval_band_and_every_run():
    from types import SimpleNamespace

    from sgdsim.validate.plot import _draw
    from sgdsim.validate.run import Point

    calls = []

    class Ax:  # records what is drawn
        def __getattr__(self, name):
            return lambda *a, **k: calls.append((name, a, k))

    points = [Point("c", "fine", 1, 10.0, low=9.0, high=11.0), Point("c", "fine", 2, 18.0, low=15.0, high=21.0),
              Point("c", "coarse", 1, 10.5), Point("c", "coarse", 2, 19.0)]
    cr = SimpleNamespace(points=points, measured={1: 10.2, 2: 17.0},
                         measured_runs={1: [10.0, 10.4], 2: [16.0, 18.0]},
                         case=SimpleNamespace(workers=(1, 2)))
    _draw(Ax(), cr)
    bands = [c for c in calls if c[0] == "fill_between"]
    assert [b[1] for b in bands] == [([1, 2], [9.0, 15.0], [11.0, 21.0])]  # fine only
    runs = [c for c in calls if c[0] == "plot" and c[2].get("label") == "runs"]
    assert runs and runs[0][1][:2] == ([1, 1, 2, 2], [10.0, 10.4, 16.0, 18.0])


def test_models_option_limits_the_models(tmp_path):
    result, _ = run(tmp_path, models="fine,lin")
    assert {p.model for p in result.points} == {"fine", "lin"}
    assert {p.model for p in result.cases[1].points} == {"fine"}


def test_refuses_to_overwrite_before_any_work(tmp_path):
    run(tmp_path)
    out = tmp_path / "out"
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def never(case):
        raise AssertionError("profiled although the run must be refused")

    with pytest.raises(ConfigError, match="exists; refusing to overwrite"):
        run(tmp_path, profile_fn=never)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    result, _ = run(tmp_path, force=True)  # --force: allowed
    assert len(result.points) == 16


def test_unrelated_files_in_outdir_are_fine(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "README.md").write_text("keep me")
    run(tmp_path)
    assert (tmp_path / "out" / "README.md").read_text() == "keep me"


# ----------------------------------------------------------------------------- dry run

def test_dry_run_never_touches_the_lab(tmp_path):
    def boom(*args):
        raise AssertionError("the lab was used in a dry run")

    result = run_validation(load_grid(write(tmp_path, GRID)), str(tmp_path / "out"), dry_run=True,
                            profile_fn=lambda c: PROFILE, measure_fn=boom, lab_fn=boom,
                            log=lambda m: None)
    assert result.dry_run and all(not cr.measured_runs for cr in result.cases)
    rows = read_csv(tmp_path / "out" / "points.csv")
    assert len(rows) == 16 and all(r["measured"] == r["error_pct"] == "" for r in rows)
    assert all(float(r["predicted"]) > 0 for r in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dry_run"] is True and summary["overall"] == {}
    assert (tmp_path / "out" / "plots" / "ring.png").stat().st_size > 0
    assert "Dry run" in (tmp_path / "out" / "summary.md").read_text()


def test_cli_dry_run_with_saved_profile(tmp_path, capsys):
    save_profile(to_profile(PROFILE), tmp_path / "prof.json")
    text = GRID.replace('duration = "3s"', 'duration = "3s"\nprofile = "prof.json"')
    path = write(tmp_path, text)
    rc = main(["validate", str(path), "-o", str(tmp_path / "out"), "--dry-run", "--models", "fine,coarse"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Dry run" in out and "| workers | fine | coarse |" in out
    assert "wrote 8 files" in err
    assert {r["model"] for r in read_csv(tmp_path / "out" / "points.csv")} == {"fine", "coarse"}
    rc = main(["validate", str(path), "-o", str(tmp_path / "out"), "--dry-run"])
    assert rc == 2 and "refusing to overwrite" in capsys.readouterr().err


def test_register_contract(tmp_path):
    parser = argparse.ArgumentParser(prog="sgdsim")
    commands = register(parser.add_subparsers(dest="command", required=True))
    assert commands == {"validate": cmd_validate}
    args = parser.parse_args(["validate", "g.toml"])
    assert (args.output, args.force, args.dry_run, args.models) == ("validation-out", False, False, "all")
    assert args.validate_cmd is cmd_validate


# ----------------------------------------------------------------------------- repeats, hardware

def test_repeats_are_averaged_and_kept(tmp_path):
    values = iter([10.0, 11.0, 13.0, 20.0, 22.0, 24.0])
    grid = GRID.split("[[case]]")[0] + '[[case]]\nname = "async"\nworkers = "1-2"\nrepeats = 3\n'
    result = run_validation(load_grid(write(tmp_path, grid)), str(tmp_path / "out"),
                            profile_fn=lambda case: PROFILE, models=("fine",),
                            measure_fn=lambda case, w, lab: next(values),
                            lab_fn=lambda case: contextlib.nullcontext(None), log=lambda m: None)
    cr = result.cases[0]
    assert cr.measured == {1: pytest.approx(34 / 3), 2: pytest.approx(22.0)}
    rows = read_csv(tmp_path / "out" / "points.csv")
    assert [r["measured_runs"] for r in rows] == ["10;11;13", "20;22;24"]
    assert float(rows[0]["measured"]) == pytest.approx(34 / 3)


def test_summary_fits_the_margin_its_single_runs_call_for(tmp_path):
    """points.csv keeps the simulator's own interval (a deterministic one worker: no width), and
    the summary's margin is the split-conformal rank of the runs' scores, computed here from
    points.csv alone."""
    rng = np.random.default_rng(3)
    grid = GRID.split("[[case]]")[0] + '[[case]]\nname = "async"\nworkers = "1-3"\nrepeats = 7\n'
    fine = {}

    def measure(case, w, lab):
        if not fine:
            fine.update({p.workers: p.predicted for p in predict_case(case, PROFILE, ("fine",))[0]})
        return fine[w] * (1 + rng.normal(0, 0.08))

    run_validation(load_grid(write(tmp_path, grid)), str(tmp_path / "out"),
                   profile_fn=lambda case: PROFILE, models=("fine",), measure_fn=measure,
                   lab_fn=lambda case: contextlib.nullcontext(None), log=lambda m: None)
    rows = read_csv(tmp_path / "out" / "points.csv")
    assert float(rows[0]["interval_low"]) == float(rows[0]["interval_high"]) == float(rows[0]["predicted"])
    runs = [(float(x), float(r["predicted"]), float(r["interval_low"]), float(r["interval_high"]))
            for r in rows for x in r["measured_runs"].split(";")]
    assert len(runs) == 21
    s = json.loads((tmp_path / "out" / "summary.json").read_text())["single_runs"]
    assert s["runs"] == 21 and s["default_margin_rel"] == MODEL_ERROR_REL
    assert s["inside"] == pytest.approx(coverage(runs, 0.0))
    assert s["inside_with_default_margin"] == pytest.approx(coverage(runs, MODEL_ERROR_REL))
    scores = sorted(run_score(*r) for r in runs)
    assert s["fitted_margin_rel"] == pytest.approx(scores[20])  # rank ceil(0.95 * 22) = 21
    # points.csv keeps 6 significant digits of a run
    assert s["inside"] < 1 <= coverage(runs, s["fitted_margin_rel"] * (1 + 1e-4))
    assert f"±{s['fitted_margin_rel']:.1%}" in (tmp_path / "out" / "summary.md").read_text()


def test_hardware_key_sets_the_models_network(tmp_path):
    from sgdsim.hardware import Hardware, save_hardware

    hw = Hardware(5e7, 1e-5, 1.6e-7, 2e-4, fcfs_weight=0.1, allreduce_bandwidth_bps=4e7, share_cv=0.3)
    save_hardware(hw, tmp_path / "hw.json")
    g = load_grid(write(tmp_path, GRID.replace('warmup = "1s"', 'warmup = "1s"\nhardware = "hw.json"')))
    ps, ring = g.cases
    # share_cv: opt-in; the FCFS weight only where a policy mixes (sync PS's hybrid), not here
    net = {"overhead_beta": 2e-4, "overhead_alpha": 0.0, "two_way_penalty": 0.0, "run_spread": 0.0}
    assert hw.predict_kwargs("ps", "sync")["fcfs_weight"] == 0.1
    assert ps.network() == {"bandwidth": 5e7, **net} and ps.model_bandwidth_bps == 5e7
    assert ring.network() == {"bandwidth": 4e7, **net, "ring_latency": 0.0,
                              "allreduce_compute_share": 0.0}
    (tmp_path / "bad.json").write_text("{")
    msg = grid_error(tmp_path, GRID.replace('warmup = "1s"', 'warmup = "1s"\nhardware = "bad.json"'))
    assert "'hardware'" in msg and "not valid JSON" in msg


def test_calibrate_key_fits_the_one_worker_point_then_predicts_again(tmp_path):
    from sgdsim.calibrate_worker import model_step_s
    from sgdsim.hardware import Hardware

    B = 100e6
    true_alpha = 5e-9
    step1 = model_step_s(to_profile(PROFILE), Hardware(B, 0.0, 8 / B, 0.0), "ps", "async", true_alpha)

    def measure(case, workers, lab):
        return 16 / step1 if workers == 1 else 10.0

    text = GRID.replace('name = "async"', 'name = "async"\ncalibrate = true')
    result = run_validation(load_grid(write(tmp_path, text)), str(tmp_path / "out"),
                            profile_fn=lambda case: PROFILE, models=("fine", "coarse"),
                            measure_fn=measure, lab_fn=lambda case: contextlib.nullcontext(None),
                            log=lambda m: None)
    cr = result.cases[0]
    assert cr.calibration["parse_alpha_s_per_byte"] == pytest.approx(true_alpha, rel=1e-3)
    one = {p.model: p for p in cr.points if p.workers == 1}
    assert abs(one["fine"].error_pct) < 0.1 and abs(one["coarse"].error_pct) < 0.5
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["cases"][0]["calibration"]["workers"] == 1
    assert "Calibrated on the measured 1-worker point" in (tmp_path / "out" / "summary.md").read_text()
    assert "calibration" not in summary["cases"][1]  # the ring case did not ask for it
    # the fitted point is not a check: the error statistics leave it out
    assert one["fine"].fitted and summary["cases"][0]["errors"]["fine"]["points"] == 2
    assert "(+0.0 %, fit)" in (tmp_path / "out" / "summary.md").read_text() or \
        "(-0.0 %, fit)" in (tmp_path / "out" / "summary.md").read_text()


def test_calibrate_key_on_all_reduce_fits_one_ranks_step_with_the_runs_spread(tmp_path):
    """A 2-rank run's examples/s are both ranks': one rank's step is 2·batch/x. Three runs at
    x·(1 - d, 1, 1 + d) fit their mean step and carry their spread into the intervals."""
    from sgdsim.calibrate_worker import model_step_s
    from sgdsim.hardware import Hardware

    B, true_alpha, d = 100e6, 5e-9, 0.01
    step2 = model_step_s(to_profile(PROFILE), Hardware(B, 0.0, 8 / B, 0.0), "allreduce", "sync",
                         true_alpha)
    x = 2 * 16 / step2
    runs = iter([x * (1 - d), x, x * (1 + d)] + [10.0] * 3)
    text = GRID.replace('workers = [2, 4]', 'workers = [2, 4]\ncalibrate = true\nrepeats = 3')
    result = run_validation(load_grid(write(tmp_path, text)), str(tmp_path / "out"),
                            profile_fn=lambda case: PROFILE, models=("fine",),
                            measure_fn=lambda case, w, lab: next(runs) if case.name == "ring" else 10.0,
                            lab_fn=lambda case: contextlib.nullcontext(None), log=lambda m: None)
    ring = result.cases[1]
    mean_step = sum(2 * 16 / v for v in (x * (1 - d), x, x * (1 + d))) / 3
    assert ring.calibration["measured_step_s"] == pytest.approx(mean_step, rel=1e-9)
    assert ring.calibration["parse_alpha_s_per_byte"] == pytest.approx(true_alpha, rel=0.05)
    four = next(p for p in ring.points if p.workers == 4)
    assert four.high - four.predicted >= 0.9 * 4.303 * d * four.predicted  # t(2)·s·sqrt(4/3) ≈ 5 %


def test_calibrate_needs_its_point_in_the_grid(tmp_path):
    text = GRID.replace('workers = "1-3"', 'workers = "2-3"\ncalibrate = true')
    assert "needs the 1-worker point" in grid_error(tmp_path, text)


def test_measured_replays_an_earlier_run_without_the_lab(tmp_path, capsys):
    first, lab = run(tmp_path)
    grid_path = tmp_path / "grid.toml"
    args = argparse.Namespace(grid=str(grid_path), output=str(tmp_path / "again"), force=False,
                              dry_run=False, models="fine,coarse",
                              measured=str(tmp_path / "out" / "points.csv"))

    def no_lab(case):
        raise AssertionError("the lab must not be used")

    assert cmd_validate(args, lab_fn=no_lab) == 0
    rows = read_csv(tmp_path / "again" / "points.csv")
    old = {(r["case"], r["model"], r["workers"]): r for r in read_csv(tmp_path / "out" / "points.csv")}
    for r in rows:
        o = old[(r["case"], r["model"], r["workers"])]
        assert r["measured_runs"] == o["measured_runs"]
        assert float(r["measured"]) == pytest.approx(float(o["measured"]), rel=1e-5)
    # an incomplete file fails before anything runs
    (tmp_path / "short.csv").write_text("case,model,workers,measured_runs\nasync,fine,1,1.0\n")
    args.measured, args.output = str(tmp_path / "short.csv"), str(tmp_path / "third")
    with pytest.raises(ConfigError, match="has 0 measured run"):
        cmd_validate(args)
    assert not (tmp_path / "third").exists()
    (tmp_path / "notes.csv").write_text("just,some\ntext,here\n")
    args.measured = str(tmp_path / "notes.csv")
    with pytest.raises(ConfigError, match="not a points.csv"):
        cmd_validate(args)


def test_a_scripted_replay_can_keep_to_some_models(tmp_path):
    """``validate.cli.replay`` (the lab scripts' replay of a grid object) with ``models``
    predicts those models only, and the same runs as the command's replay."""
    from sgdsim.validate.cli import replay
    from sgdsim.validate.grid import load_grid

    run(tmp_path)
    out = replay(load_grid(str(tmp_path / "grid.toml")), str(tmp_path / "out" / "points.csv"),
                 str(tmp_path / "coarse"), models=("coarse",))
    points = [p for cr in out.cases for p in cr.points]
    assert points and {p.model for p in points} == {"coarse"}
    old = {(r["case"], int(r["workers"])): float(r["measured"])
           for r in read_csv(tmp_path / "out" / "points.csv") if r["model"] == "coarse"}
    assert {(p.case, p.workers): p.measured for p in points} == pytest.approx(old, rel=1e-5)


def test_measured_pools_later_runs_of_the_same_points(tmp_path):
    """``--measured A --measured B``: B's runs of a point follow A's, the measurement is the mean
    of all of them, and points B does not have keep A's runs; a file pooled twice is refused."""
    run(tmp_path)
    first = tmp_path / "out" / "points.csv"
    old = {(r["case"], r["workers"]): r["measured_runs"] for r in read_csv(first) if r["model"] == "fine"}
    (tmp_path / "more.csv").write_text("case,workers,measured_runs,grid\n"
                                       "async,2,50.5,g\nasync,2,60.25,g\nother,2,1.0,g\n")
    args = argparse.Namespace(grid=str(tmp_path / "grid.toml"), output=str(tmp_path / "pooled"),
                              force=False, dry_run=False, models="fine",
                              measured=[str(first), str(tmp_path / "more.csv")])
    assert cmd_validate(args, lab_fn=None) == 0
    rows = {(r["case"], r["workers"]): r for r in read_csv(tmp_path / "pooled" / "points.csv")}
    two = rows[("async", "2")]
    runs = [float(x) for x in old[("async", "2")].split(";")] + [50.5, 60.25]
    assert [float(x) for x in two["measured_runs"].split(";")] == pytest.approx(runs, rel=1e-5)
    assert float(two["measured"]) == pytest.approx(sum(runs) / len(runs), rel=1e-5)
    for key in (("async", "1"), ("async", "3"), ("ring", "2")):
        assert rows[key]["measured_runs"] == old[key]
    args.measured, args.output = [str(first), str(first)], str(tmp_path / "twice")
    with pytest.raises(ConfigError, match="already in an earlier --measured file"):
        cmd_validate(args)
    assert not (tmp_path / "twice").exists()


def _more_runs_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("more_runs", ROOT / "examples" / "lab" / "more_runs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_more_runs_writes_runs_that_validate_pools_and_never_overwrites(tmp_path, monkeypatch, capsys):
    """more_runs.py: rounds over the points, one row per run, read back as that point's runs in
    order; an existing output is refused (exit 2, one line) unless --append; bad points exit 2."""
    from sgdsim.validate.run import measured_runs

    mod = _more_runs_module()
    values = iter([11.0, 22.0, 33.0, 44.0])
    order = []
    monkeypatch.setattr(mod, "default_lab", lambda case: contextlib.nullcontext(None))
    monkeypatch.setattr(mod, "default_measure",
                        lambda case, w, lab: order.append((case.name, w)) or next(values))
    monkeypatch.chdir(ROOT)
    out = tmp_path / "runs.csv"
    points = ["async:ps-async-nooverlap:2", "cnn:cnn10-async-overlap-100:1"]
    assert mod.main([str(out), *points, "--repeats", "2"]) == 0
    assert order == [("ps-async-nooverlap", 2), ("cnn10-async-overlap-100", 1)] * 2  # rounds
    assert measured_runs(str(out)) == {("ps-async-nooverlap", 2): [11.0, 33.0],
                                       ("cnn10-async-overlap-100", 1): [22.0, 44.0]}
    records = [json.loads(line) for line in (tmp_path / "runs.runs.jsonl").read_text().splitlines()]
    assert [(r["case"], r["round"], r["measured"]) for r in records] == [
        ("ps-async-nooverlap", 1, 11.0), ("cnn10-async-overlap-100", 1, 22.0),
        ("ps-async-nooverlap", 2, 33.0), ("cnn10-async-overlap-100", 2, 44.0)]
    before = out.read_bytes()
    capsys.readouterr()
    assert mod.main([str(out), *points]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and err.count("\n") == 1 and out.read_bytes() == before
    for bad in ("async:ps-async-nooverlap:3", "async:nope:2", "async:ps-async-nooverlap"):
        assert mod.main([str(tmp_path / "other.csv"), bad]) == 2
    assert not (tmp_path / "other.csv").exists() and len(order) == 4
