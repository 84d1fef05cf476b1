import pytest

from sgdsim.analytic.async_ps import async_ps
from sgdsim.analytic.coarse_profile import from_profile
from sgdsim.calibrate import calibrate_threshold, read_measured
from sgdsim.cli import main
from sgdsim.errors import ProfileError
from sgdsim.profile.io import load_profile

PROFILE = "examples/profiles/resnet50-nooverlap.json"


def _measured_at(rho, tmp_path, bw=1e9 / 8):  # 1 Gb/s, in bytes/s
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


@pytest.mark.parametrize("value", ["inf", "nan", "-3", "0"])
def test_a_throughput_that_is_not_a_positive_finite_number_is_refused(tmp_path, value):
    path = tmp_path / "m.csv"
    path.write_text(f"workers,throughput\n1,{value}\n")
    with pytest.raises(ProfileError, match="positive finite"):
        read_measured(str(path))


def test_a_binary_measured_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_bytes(b"workers,throughput\n1,\xff\xfe10\n")
    assert main(["calibrate-threshold", str(path), PROFILE]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_bundled_example_runs():
    assert main(["calibrate-threshold", "examples/calibrate/measured-async.csv",
                 "examples/calibrate/lab-mlp-nooverlap.json", "--bandwidth", "100Mbps"]) == 0
