"""When cycles run: durations, the cron parser, and the schedule loop on a fake clock.

Covered: Go-style durations and bad ones; cron fields (lists, ranges, steps, names, Sunday as 0
or 7), the day-of-month/day-of-week OR rule, next-run times across hour, day, month and year
boundaries, expressions that never match, and clear errors; run-once, interval, cron, the
interval winning over cron, and a failing cycle not ending the schedule.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from descheduler.schedule import CronSchedule, ScheduleError, parse_duration, run_schedule
from tests.descheduler.builders import FakeClock


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("90", 90, id="bare seconds"),
        pytest.param("60s", 60, id="seconds"),
        pytest.param("10m", 600, id="minutes"),
        pytest.param("1h30m", 5400, id="hours and minutes"),
        pytest.param("1.5s", 1.5, id="fraction"),
        pytest.param("500ms", 0.5, id="milliseconds"),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "m10", "-5", "10m fast"])
def test_bad_durations_are_clear_errors(text: str) -> None:
    with pytest.raises(ScheduleError, match="duration"):
        parse_duration(text)


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
            "0 0 1 jan *",
            "2026-03-01T00:00:00",
            "2027-01-01T00:00:00",
            id="month name, across a year",
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
def test_cron_next_run(expression: str, after: str, expected: str) -> None:
    assert CronSchedule.parse(expression).next_after(at(after)) == at(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("* * * *", "needs 5 fields", id="too few fields"),
        pytest.param("60 * * * *", "cron minute: 60 is outside 0-59", id="out of range"),
        pytest.param("*/0 * * * *", "bad step", id="zero step"),
        pytest.param("5-1 * * * *", "runs backwards", id="backwards range"),
        pytest.param("x * * * *", "is not a number", id="not a number"),
    ],
)
def test_bad_cron_expressions_are_clear_errors(expression: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        CronSchedule.parse(expression)


def test_a_cron_expression_that_never_matches_says_so() -> None:
    with pytest.raises(ScheduleError, match="never matches"):
        CronSchedule.parse("0 0 30 2 *").next_after(at("2026-01-01T00:00:00"))


def test_no_interval_and_no_cron_runs_once() -> None:
    runs: list[int] = []
    clock = FakeClock()
    assert (
        run_schedule(
            lambda: runs.append(1), interval=0, cron=None, clock=clock, stop=threading.Event()
        )
        == 1
    )
    assert runs == [1]
    assert clock.slept == []


def test_an_interval_runs_a_cycle_then_sleeps_the_interval() -> None:
    clock = FakeClock()
    cycles = run_schedule(
        lambda: None, interval=60, cron=None, clock=clock, stop=threading.Event(), max_cycles=3
    )
    assert cycles == 3
    assert clock.slept == [60, 60]


def test_the_interval_wins_when_a_cron_expression_is_given_too() -> None:
    clock = FakeClock()
    run_schedule(
        lambda: None,
        interval=30,
        cron=CronSchedule.parse("0 0 * * *"),
        clock=clock,
        stop=threading.Event(),
        max_cycles=2,
    )
    assert clock.slept == [30]


def test_cron_sleeps_until_each_matching_minute() -> None:
    clock = FakeClock(at("2026-01-01T10:07:30"))
    seen: list[datetime] = []
    run_schedule(
        lambda: seen.append(clock.now()),
        interval=0,
        cron=CronSchedule.parse("*/10 * * * *"),
        clock=clock,
        stop=threading.Event(),
        max_cycles=2,
    )
    assert seen == [at("2026-01-01T10:10:00"), at("2026-01-01T10:20:00")]


def test_a_failing_cycle_does_not_end_the_schedule() -> None:
    calls: list[int] = []

    def cycle() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")

    run_schedule(
        cycle, interval=1, cron=None, clock=FakeClock(), stop=threading.Event(), max_cycles=2
    )
    assert len(calls) == 2


def test_a_set_stop_event_ends_the_schedule() -> None:
    stop = threading.Event()
    stop.set()
    assert run_schedule(lambda: None, interval=5, cron=None, clock=FakeClock(), stop=stop) == 0
