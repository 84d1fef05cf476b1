import pytest

from sgdsim.errors import ConfigError
from sgdsim.predict import parse_worker_profile, parse_workers
from sgdsim.units import parse_bandwidth_bps, parse_duration_s, parse_size_bytes


@pytest.mark.parametrize("text,bps", [("10Gbps", 10e9), ("100Mbps", 100e6), ("1.25GB/s", 10e9),
                                      ("25 Gbps", 25e9), ("1e9", 1e9), (5e8, 5e8), ("1kbps", 1e3)])
def test_bandwidth(text, bps):
    assert parse_bandwidth_bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text,size", [("28MB", 28e6), ("4KiB", 4096), ("1GiB", 2**30),
                                       ("8Mb", 1e6), ("123", 123), ("0.5kB", 500)])
def test_size(text, size):
    assert parse_size_bytes(text) == pytest.approx(size)


@pytest.mark.parametrize("text,secs", [("12ms", 0.012), ("30s", 30), ("5us", 5e-6), ("2min", 120), ("0.25", 0.25)])
def test_duration(text, secs):
    assert parse_duration_s(text) == pytest.approx(secs)


@pytest.mark.parametrize("fn,text", [(parse_bandwidth_bps, "10Gbs"), (parse_bandwidth_bps, "fast"),
                                     (parse_bandwidth_bps, "0Gbps"), (parse_size_bytes, "28XB"),
                                     (parse_size_bytes, "-3MB"), (parse_duration_s, "12 parsecs"),
                                     (parse_bandwidth_bps, "nanGbps")])
def test_bad_units_name_the_input(fn, text):
    with pytest.raises(ConfigError) as e:
        fn(text)
    assert text.strip() in str(e.value) or "-3MB" in str(e.value)
    assert "\n" not in str(e.value)


def test_workers_specs():
    assert parse_workers("1-4") == [1, 2, 3, 4]
    assert parse_workers("1,2,4,8") == [1, 2, 4, 8]
    assert parse_workers("4") == [4]
    assert parse_workers("8,1-2") == [1, 2, 8]
    for bad in ("0", "a-b", "", "3-x"):
        with pytest.raises(ConfigError):
            parse_workers(bad)


def test_worker_profile_spec():
    assert parse_worker_profile("v100=dir/a.json:4") == ("v100", "dir/a.json", 4)
    for bad in ("v100", "v100=a.json", "=a.json:3", "v100=a.json:x"):
        with pytest.raises(ConfigError):
            parse_worker_profile(bad)


def test_durations_print_in_human_units():
    from sgdsim.units import format_duration_s, parse_duration_s

    assert [format_duration_s(x) for x in (42, 90, 150, 3600, 5400, 2 * 86400, float("inf"))] == \
        ["42 s", "90 s", "2.5 min", "1.0 h", "1.5 h", "2.0 d", "never"]
    assert parse_duration_s("2h") == 7200 and parse_duration_s("30min") == 1800
    assert parse_duration_s("1.5hr") == 5400 and parse_duration_s("1d") == 86400
