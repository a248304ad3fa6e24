"""Durations mean the same in every component: Go's grammar, plus bare seconds.

Covered: every Go unit, fractions, compound forms in any order, bare numbers, zero; negative,
empty, unit-less compounds, unknown units and spaces inside are clear errors; the shortest
spelling printed back parses to the same value.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tas.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("0", 0.0, id="zero"),
        pytest.param("90", 90.0, id="bare seconds"),
        pytest.param("1.5", 1.5, id="bare fraction"),
        pytest.param("2s", 2.0, id="seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("250us", 0.00025, id="microseconds"),
        pytest.param("250µs", 0.00025, id="microseconds, micro sign"),
        pytest.param("1000000ns", 0.001, id="nanoseconds"),
        pytest.param("10m", 600.0, id="minutes"),
        pytest.param("1h", 3600.0, id="hours"),
        pytest.param("1h30m", 5400.0, id="hours and minutes (Go)"),
        pytest.param("1m30s", 90.0, id="minutes and seconds (Go)"),
        pytest.param("30m1h", 5400.0, id="any order, as Go allows"),
        pytest.param("1.5h", 5400.0, id="fraction with unit"),
        pytest.param(" 2s ", 2.0, id="surrounding spaces"),
        pytest.param("+3s", 3.0, id="explicit plus"),
    ],
)
def test_go_durations_and_bare_seconds_are_parsed(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "is not a duration", id="empty"),
        pytest.param("-1s", "must not be negative", id="negative"),
        pytest.param("-5", "must not be negative", id="negative bare"),
        pytest.param("1h30", "is not a duration", id="compound ending without a unit"),
        pytest.param("10x", "is not a duration", id="unknown unit"),
        pytest.param("1d", "is not a duration", id="days are not Go"),
        pytest.param("m10", "is not a duration", id="unit first"),
        pytest.param("2 s", "is not a duration", id="space inside"),
        pytest.param("10m fast", "is not a duration", id="trailing words"),
        pytest.param("s", "is not a duration", id="unit alone"),
    ],
)
def test_bad_durations_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_duration(text)


@given(st.integers(min_value=1, max_value=10 * 86400))
def test_the_printed_spelling_parses_back_to_the_same_seconds(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
