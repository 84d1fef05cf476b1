"""Every pilot grid replays its measured grid (issue 35, docs/validation/torch/README.md): the
same cases with the same settings, PS cases fitted on W = 1 and 2 and checked only at counts
the measured grid ran, so a replay compares each prediction with a real run."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sgdsim.validate.grid import load_grid

GRIDS = Path(__file__).resolve().parent.parent / "examples" / "grids"
PILOTS = sorted(GRIDS.glob("lab-torch*-pilot.toml"))


def test_every_measured_torch_grid_with_w1_and_w2_has_a_pilot():
    measured = {p for p in GRIDS.glob("lab-torch*.toml") if not p.stem.endswith("-pilot")}
    with_pilot = {p.with_name(p.name.replace("-pilot", "")) for p in PILOTS}
    both = {p for p in measured
            if any({1, 2} <= set(c.workers) for c in load_grid(p).cases if c.arch == "ps")}
    assert both and both <= with_pilot


@pytest.mark.parametrize("pilot", PILOTS, ids=lambda p: p.stem)
def test_a_pilot_grid_is_its_measured_grid_fitted_on_w_up_to_2(pilot):
    base = {c.name: c for c in load_grid(pilot.with_name(pilot.name.replace("-pilot", ""))).cases}
    cases = load_grid(pilot).cases
    assert {c.name for c in cases} == set(base)
    for case in cases:
        measured = base[case.name]
        assert set(case.workers) <= set(measured.workers), case.name
        if case.arch == "ps":
            assert case.pilot == (1, 2), case.name
            assert {1, 2, 4, 8} <= set(case.workers), case.name
        else:
            assert case.pilot is None, case.name
        same = replace(case, workers=measured.workers, pilot=measured.pilot)
        assert same == measured, case.name
