"""When cycles run: the schedule loop on a fake clock.

Covered: run-once, interval, cron, the interval winning over cron, and a failing cycle not
ending the schedule. Parsing durations and cron expressions is covered by
tests/tas/test_durations.py and tests/tas/test_cron.py.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from descheduler.schedule import run_schedule
from tas.cron import CronSchedule
from tests.descheduler.builders import FakeClock


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


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
