import pytest

from sgdsim.analytic.async_ps import async_ps
from sgdsim.analytic.coarse_profile import from_profile
from sgdsim.calibrate import calibrate_threshold, read_measured
from sgdsim.cli import main
from sgdsim.errors import ProfileError
from sgdsim.profile.io import load_profile

PROFILE = "examples/profiles/resnet50-nooverlap.json"


def _measured_at(rho, tmp_path, bw=1e9):
    c = from_profile(load_profile(PROFILE))
    rows = [(w, async_ps([(c, w)], bw, "threshold", rho).throughput) for w in range(1, 9)]
    path = tmp_path / "m.csv"
    path.write_text("workers,throughput\n" + "".join(f"{w},{x!r}\n" for w, x in rows))
    return path


def test_recovers_a_threshold_that_generated_the_data(tmp_path):
    path = _measured_at(0.3, tmp_path)
    cal = calibrate_threshold(PROFILE, read_measured(str(path)), "1Gbps")
    errs = {rho: mean for rho, mean, _ in cal.table}
    assert errs[cal.best] == pytest.approx(0.0, abs=1e-9)
    assert errs[0.3] == pytest.approx(0.0, abs=1e-9)
    assert max(errs.values()) > 1.0  # the choice matters on this data


def test_cli_prints_every_candidate(tmp_path, capsys):
    path = _measured_at(0.3, tmp_path)
    assert main(["calibrate-threshold", str(path), PROFILE, "--bandwidth", "1Gbps"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 12 and "best --rho-threshold" in out


def test_bad_measured_file(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("workers,speed\n1,3\n")
    with pytest.raises(ProfileError, match="line 2"):
        read_measured(str(path))
    assert main(["calibrate-threshold", str(tmp_path / "none.csv"), PROFILE]) == 2
