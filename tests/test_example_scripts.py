"""The example scripts behind docs/validation's figures refuse bad input as the CLI does: one
line on stderr naming what is wrong, exit code 2, no traceback."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISSING = "/nonexistent/sgdsim-test"

CASES = [
    ("examples/lab/async_by_w.py", [MISSING], MISSING),
    ("examples/lab/runs_table.py", [MISSING], MISSING),
    ("examples/lab/runs_table.py", [], "usage"),
    ("examples/lab/validation_table.py", [MISSING], MISSING),
    ("examples/lab/joiner.py", [], "usage"),
    ("examples/lab/joiner.py", ["report", MISSING + "/a", MISSING + "/b"], MISSING),
    ("examples/lab/joiner.py", ["report", "one-file"], "pairs of client files"),
    ("examples/lab/joiner.py", ["client", "h", "0", "abc"], "T0"),
    ("examples/lab/incumbent.py", [], "usage"),
    ("examples/lab/incumbent.py", ["report", MISSING + "/a", MISSING + "/b"], MISSING),
    ("examples/lab/incumbent.py", ["long", "127.0.0.1", "pull", "10XB", "0"], "XB"),
    ("examples/lab/lone_transfers.py", [], "usage"),
    ("examples/lab/w2_phases.py", ["torch-b:no-such-case"], "no-such-case"),
    ("examples/lab/stagger_phases.py", [MISSING], MISSING),
    ("examples/lab/stagger_phases.py", ["README.md"], "not a runs file"),
    ("examples/ops/prior_cv.py", [MISSING], MISSING),
    ("examples/ops/estimate_models.py", ["--models-db", MISSING, "--grid-db", MISSING, "--out", "o"], MISSING),
    ("examples/ops/ensemble_cv.py", [MISSING], MISSING),
    ("examples/ops/ensemble_calls.py", [MISSING, MISSING, "--ops", "conv2d"], MISSING),
    ("examples/ops/reference_window.py", [], "usage"),
    ("examples/ops/terms_candidates.py", [MISSING, MISSING], MISSING),
    ("examples/ops/terms_cv.py", [MISSING], MISSING),
    ("examples/ops/terms_cv.py", [], "usage"),
    ("examples/ops/terms_cv.py", ["README.md", "--seeds", "0"], "--seeds"),
    ("examples/ops/model_calls.py", [MISSING, MISSING], MISSING),
    ("examples/ops/model_calls.py", [], "required"),
    ("examples/ops/model_calls.py", [MISSING, MISSING, "--dtype", "bf16"], "bf16"),
    ("examples/ops/kept_outputs.py", [], "required"),
    ("examples/ops/kept_outputs.py", [MISSING, "--cases", "zoo:mlp:7"], "zoo:mlp:7"),
    ("examples/ops/replay_steps.py", [MISSING, MISSING, MISSING], MISSING),
    ("examples/ops/gap_widths.py", [], "required"),
    ("examples/ops/gap_widths.py", ["README.md"], "refusing to overwrite"),
    ("examples/ops/gap_widths.py", [MISSING, "--shapes", "0"], "--shapes"),
    ("docs/validation/ops/run56/gap_errors.py", [], "usage"),
    ("docs/validation/ops/run56/gap_errors.py", [MISSING, MISSING], MISSING),
    ("docs/validation/ops/run58/bf16_over_f32.py", [], "usage"),
    ("docs/validation/ops/run58/bf16_over_f32.py", [MISSING, MISSING], MISSING),
    ("examples/ops/pooled_bar.py", [MISSING, MISSING], MISSING),
    ("examples/ops/pooled_bar.py", [MISSING, MISSING, MISSING], "pairs"),
    ("examples/ops/pooled_bar.py", [], "usage"),
    ("examples/ops/replay_steps.py", ["README.md", "README.md", "README.md"], "README.md"),
    ("examples/ops/support_calls.py", [MISSING, MISSING], MISSING),
    ("examples/ops/support_calls.py", [MISSING], "usage"),
    ("examples/ops/support_calls.py", [MISSING, MISSING, "--support", "5,x"], "--support"),
    ("examples/ops/support_calls.py", [MISSING, MISSING, "--sample", "1"], "--sample"),
    ("examples/ops/without_rows.py", [MISSING, MISSING], MISSING),
    ("examples/ops/without_rows.py", [MISSING], "usage"),
    ("examples/ops/call_groups.py", [MISSING, MISSING], MISSING),
    ("examples/ops/call_groups.py", [MISSING], "usage"),
    ("examples/ops/step_factor.py", [MISSING], MISSING),
    ("examples/ops/step_factor.py", ["README.md"], "not a step table"),
    ("examples/ops/zero_backward_ties.py", ["9", "3"], "FIRST <= LAST"),
    ("examples/ops/flagged_calls.py", [MISSING, MISSING], MISSING),
    ("examples/ops/flagged_calls.py", [], "required"),
    ("examples/ops/per_image_convs.py", [MISSING, MISSING], MISSING),
    ("examples/ops/first_shapes.py", [], "usage"),
    ("examples/ops/first_shapes.py", [MISSING, MISSING + ".csv", "mm", "30"], MISSING),
    ("examples/ops/first_shapes.py", ["README.md", MISSING + ".csv", "mm", "30"], "not an operator export"),
    ("examples/ops/first_shapes.py", ["README.md", "README.md", "mm", "30"], "refusing to overwrite"),
    ("examples/ops/first_shapes.py", ["README.md", MISSING + ".csv", "mm", "x"], "N (rows a type keeps)"),
    ("examples/multigpu/tf_overlap.py", ["extra"], "usage"),
    ("examples/lab/coarse_saturation.py", ["extra"], "usage"),
    ("examples/multigpu/nccl1_ring.py", ["extra"], "usage"),
    ("examples/multigpu/pilot_check.py", ["extra"], "usage"),
    ("examples/lab/split_occupancy.py", ["extra"], "extra"),
    ("examples/lab/knob_ablation.py", ["extra"], "extra"),
    ("examples/lab/interval_levels.py", ["extra"], "extra"),
]


@pytest.mark.parametrize("script, args, named", CASES, ids=[f"{c[0].split('/')[-1]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_is_one_line_and_exit_2(script, args, named):
    got = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 2, got.stderr
    assert "Traceback" not in got.stderr
    lines = got.stderr.strip().splitlines()
    assert lines and named in lines[-1], got.stderr
    assert len([line for line in lines if not line.startswith("usage:")]) <= 1, got.stderr


def test_more_runs_keeps_a_saved_runs_record(tmp_path):
    """more_runs.py writes each run's whole record beside its CSV; an existing record is never
    appended to or overwritten without --append (refused before any lab comes up)."""
    (tmp_path / "out.runs.jsonl").write_text("{}\n")
    got = subprocess.run([sys.executable, os.path.join(ROOT, "examples/lab/more_runs.py"),
                          str(tmp_path / "out.csv"), "torch-c:torch-cnn6-b8-ps-async-100:2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 and "out.runs.jsonl exists" in got.stderr, got.stderr
    assert (tmp_path / "out.runs.jsonl").read_text() == "{}\n" and not (tmp_path / "out.csv").exists()


def test_pooled_bar_refuses_a_retest_file_with_no_rows(tmp_path):
    """A grid and an empty retest CSV share no type: one line and exit 2, not an empty table."""
    db, rows = tmp_path / "mp.sqlite", tmp_path / "rows.csv"
    rows.write_text("")
    subprocess.run([sys.executable, "-m", "sgdsim.cli", "ops", "import", "-q", "--db", str(db),
                    os.path.join(ROOT, "docs/validation/ops/db-maxpool-epyc-2026-12-04-run20.csv")],
                   check=True, capture_output=True, timeout=60)
    got = subprocess.run([sys.executable, os.path.join(ROOT, "examples/ops/pooled_bar.py"), str(db),
                          str(rows)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr.strip().splitlines() == [got.stderr.strip()] and "no type" in got.stderr
