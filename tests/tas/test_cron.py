"""Cron schedules: upstream descheduler's five-field expressions, evaluated by cronsim.

Covered: the next run for lists, ranges, steps, names, Sunday as 7, leap days, years and the
day-of-month OR day-of-week rule; bad expressions and ones that never match are clear errors.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tas.cron import CronError, CronSchedule


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        pytest.param("* * * * *", "2026-01-01T10:00:30", "2026-01-01T10:01:00", id="every minute"),
        pytest.param("*/15 * * * *", "2026-01-01T10:16:00", "2026-01-01T10:30:00", id="step"),
        pytest.param("0 0 * * *", "2026-01-01T10:00:00", "2026-01-02T00:00:00", id="midnight"),
        pytest.param(
            "5,35 9-17 * * *", "2026-01-01T17:35:00", "2026-01-02T09:05:00", id="list and range"
        ),
        pytest.param(
            "0 12 * * mon",
            "2026-01-01T00:00:00",
            "2026-01-05T12:00:00",
            id="weekday name (Jan 1 2026 is a Thursday)",
        ),
        pytest.param("0 0 * * 7", "2026-01-01T00:00:00", "2026-01-04T00:00:00", id="Sunday as 7"),
        pytest.param(
            "0 0 1 jan *", "2026-03-01T00:00:00", "2027-01-01T00:00:00", id="month name, next year"
        ),
        pytest.param(
            "0 0 13 * fri",
            "2026-01-01T00:00:00",
            "2026-01-02T00:00:00",
            id="day-of-month OR day-of-week",
        ),
        pytest.param("0 0 29 2 *", "2026-03-01T00:00:00", "2028-02-29T00:00:00", id="leap day"),
        pytest.param(
            "10-20/5 * * * *", "2026-01-01T10:16:00", "2026-01-01T10:20:00", id="range with step"
        ),
    ],
)
def test_the_next_run_is_the_first_matching_minute_after(
    expression: str, after: str, expected: str
) -> None:
    assert CronSchedule.parse(expression).next_after(at(after)) == at(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("* * * *", "needs 5 fields", id="too few fields"),
        pytest.param("* * * * * *", "needs 5 fields", id="too many fields"),
        pytest.param("60 * * * *", "minute", id="out of range"),
        pytest.param("*/0 * * * *", "minute", id="zero step"),
        pytest.param("5-1 * * * *", "minute", id="backwards range"),
        pytest.param("x * * * *", "minute", id="not a number"),
        pytest.param("0 0 30 2 *", "day-of-month", id="a date that never exists"),
    ],
)
def test_bad_cron_expressions_are_clear_errors(expression: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        CronSchedule.parse(expression)
