import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgdsim.errors import ConfigError
from sgdsim.predict import parse_worker_profile, parse_workers
from sgdsim.units import (is_whole_numeral, parse_bandwidth_bps, parse_duration_s, parse_number,
                          parse_size_bytes)


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


# ----------------------------------------------------------------------------- properties
# For ANY input, every parser either returns a finite value within its bounds or raises
# ConfigError with one line: never OverflowError (int -> float), ValueError (int('²')),
# RecursionError or anything else. Derandomized: the same inputs on every run.

PROPERTY = settings(max_examples=1000, deadline=None, derandomize=True)
UNICODE_DIGITS = st.text(st.characters(categories=("Nd", "No")), min_size=1, max_size=5)
HUGE_TEXT = st.integers(280, 480).map(lambda k: str(10 ** k))
NUMERALS = st.one_of(st.text(), UNICODE_DIGITS, HUGE_TEXT, st.integers().map(str),
                     st.floats().map(repr), st.sampled_from(["1e308", "1e309", "-0", "+5", ".5",
                                                             "5.", "1_000", " 7 ", "0x10"]))
WITH_UNITS = st.one_of(NUMERALS, st.tuples(NUMERALS, st.sampled_from(
    ["", " ", "Tbps", "GB/s", "KiB", "TB", "d", "ms", "µs", "x"])).map("".join))
VALUES = st.one_of(WITH_UNITS, st.integers(), st.integers(-10 ** 500, 10 ** 500), st.floats(),
                   st.none(), st.booleans(), st.lists(st.integers(), max_size=2))


def _refused(fn, *args, **kwargs):
    """fn's value, or None when it raised ConfigError (one line); anything else fails."""
    try:
        return fn(*args, **kwargs)
    except ConfigError as e:
        assert "\n" not in str(e) and str(e)
        return None


@PROPERTY
@given(VALUES)
def test_unit_parsers_return_a_finite_value_or_refuse_in_one_line(value):
    for fn, ok in ((parse_bandwidth_bps, lambda v: 0 < v < math.inf),
                   (parse_size_bytes, lambda v: 0 <= v < math.inf),
                   (parse_duration_s, lambda v: 0 <= v < math.inf)):
        out = _refused(fn, value)
        assert out is None or (isinstance(out, float) and ok(out)), (fn.__name__, value, out)


BOUNDS = st.tuples(st.floats(-1e300, 1e300), st.floats(-1e300, 1e300)).map(sorted)


@PROPERTY
@given(VALUES, BOUNDS, st.booleans())
def test_parse_number_returns_a_value_within_its_bounds_or_refuses(value, bounds, integer):
    lo, hi = bounds
    out = _refused(parse_number, value, "--opt", lo=lo, hi=hi, integer=integer)
    if out is None:
        return
    assert lo <= out <= hi and math.isfinite(out)
    assert type(out) is (int if integer else float)
    if isinstance(value, str):  # text: ASCII digits only, however int() and float() read '١٢'
        assert value.strip().isascii()


@PROPERTY
@given(st.one_of(UNICODE_DIGITS, st.text(), HUGE_TEXT))
def test_the_message_names_the_value_and_what(text):
    try:
        parse_number(text, "--batch-size", lo=1, hi=1000, integer=True)
    except ConfigError as e:
        assert str(e).startswith("--batch-size ") and "\n" not in str(e)


@pytest.mark.parametrize("text", ["²", "①", "١٢", "٣", "1²", "²1", "1.0", "1e3", " ", ""])
def test_what_no_count_looks_like(text):
    assert not is_whole_numeral(text)
    with pytest.raises(ConfigError):
        parse_number(text, "n", lo=0, hi=10, integer=True)


def test_a_count_is_ascii_digits_without_a_sign():
    assert is_whole_numeral(" 12 ") and is_whole_numeral("0")
    assert not is_whole_numeral("+3") and not is_whole_numeral("-3") and not is_whole_numeral(3)


@pytest.mark.parametrize("value,integer,expected", [
    ("42", True, 42), (" 42 ", True, 42), ("1e3", False, 1000.0), (".5", False, 0.5),
    (7, False, 7.0), (2.0, True, 2), (10 ** 300, False, 1e300)])
def test_parse_number_reads_plain_numbers(value, integer, expected):
    out = parse_number(value, "x", lo=0, hi=1e301, integer=integer)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize("value,integer,message", [
    (10 ** 400, True, "at most 100, got an integer of about 400 digits"),
    ("9" * 401, True, "at most 400 characters"), ("1e400", False, "finite"),
    (float("nan"), False, "finite"), (True, False, "a number"), ("²", True, "ASCII digits"),
    ("١٢", False, "ASCII digits"), ("-1", True, "at least 0"), ("1.5", True, "whole number"),
    (1.5, True, "whole number"), ([1], False, "a number")])
def test_parse_number_says_what_is_wrong(value, integer, message):
    with pytest.raises(ConfigError, match=message):
        parse_number(value, "x", lo=0, hi=100, integer=integer)


@pytest.mark.parametrize("fn,text", [(parse_bandwidth_bps, "1e308Tbps"),
                                     (parse_duration_s, "1e308d"), (parse_size_bytes, "1e308TB"),
                                     (parse_bandwidth_bps, 10 ** 400)])
def test_a_finite_number_times_its_unit_can_still_overflow(fn, text):
    with pytest.raises(ConfigError):  # once returned inf
        fn(text)


@given(st.integers(min_value=1, max_value=10**12))
def test_a_formatted_size_reads_back_within_its_digits(n):
    from sgdsim.units import format_size_bytes

    assert parse_size_bytes(format_size_bytes(n)) == pytest.approx(n, rel=5e-4)


@pytest.mark.parametrize("n,text", [(25 * 2**20, "25MiB"), (1.5 * 2**20, "1.5MiB"), (4096, "4KiB"),
                                    (28e6, "28MB"), (553e6, "553MB"), (1e9, "1GB"), (3, "3B")])
def test_sizes_are_written_as_users_give_them(n, text):
    from sgdsim.units import format_size_bytes

    assert format_size_bytes(n) == text and parse_size_bytes(text) == n
