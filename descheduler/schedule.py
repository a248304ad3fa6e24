"""When cycles run: every interval, on a cron schedule, or once.

`--descheduling-interval` wins when both it and `--descheduling-interval-cron-expression` are
given (as upstream); neither (or interval 0 without cron) runs one cycle and returns. The cron
parser is our own and small: five fields (minute hour day-of-month month day-of-week) with `*`,
numbers, ranges `a-b`, lists `a,b`, steps `*/n` and `a-b/n`, month and weekday names, and the
classic rule that a restricted day-of-month and day-of-week match when either does.

Errors:
    ScheduleError      an interval or cron expression that cannot be used
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from descheduler.clock import Clock

log = logging.getLogger(__name__)

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
#: How far ahead a cron expression is searched before it is declared impossible (Feb 30...).
_HORIZON_DAYS = 366 * 5


class ScheduleError(ValueError):
    """An interval or cron expression that cannot be used."""


def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration (`90s`, `10m`, `1h30m`, `0`); a bare number is seconds."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if value < 0:
            raise ScheduleError(f"duration {text!r} must not be negative")
        return value
    position, seconds = 0, 0.0
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for match in _DURATION.finditer(text):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * scale[match.group(2)]
        position = match.end()
    if position != len(text) or not text:
        raise ScheduleError(f"duration {text!r} is not like 90s, 10m or 1h30m")
    return seconds


def _field(text: str, low: int, high: int, names: list[str] | None, what: str) -> frozenset[int]:
    values: set[int] = set()

    def number(part: str) -> int:
        lowered = part.lower()
        if names is not None and lowered in names:
            return names.index(lowered) + (low if what == "month" else 0)
        if not part.isdigit():
            raise ScheduleError(f"cron {what}: {part!r} is not a number")
        value = int(part)
        if not low <= value <= high:
            raise ScheduleError(f"cron {what}: {value} is outside {low}-{high}")
        return value

    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"cron {what}: bad step in {item!r}")
            step = int(step_text)
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = number(first), number(last)
            if end < start:
                raise ScheduleError(f"cron {what}: range {base!r} runs backwards")
        else:
            start = number(base)
            end = high if step_text else start
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        fields = expression.split()
        if len(fields) != 5:
            raise ScheduleError(
                f"cron expression {expression!r} needs 5 fields "
                "(minute hour day-of-month month day-of-week)"
            )
        minute, hour, day, month, weekday = fields
        return cls(
            expression=expression,
            minutes=_field(minute, 0, 59, None, "minute"),
            hours=_field(hour, 0, 23, None, "hour"),
            days=_field(day, 1, 31, None, "day of month"),
            months=_field(month, 1, 12, _MONTHS, "month"),
            # 0 and 7 are both Sunday.
            weekdays=frozenset(v % 7 for v in _field(weekday, 0, 7, _DAYS, "day of week")),
            any_day=day == "*",
            any_weekday=weekday == "*",
        )

    def _day_matches(self, moment: datetime) -> bool:
        if moment.month not in self.months:
            return False
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok

    def next_after(self, moment: datetime) -> datetime:
        """The first matching minute strictly after `moment` (same timezone)."""
        start = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for offset in range(_HORIZON_DAYS):
            candidate_day = day + timedelta(days=offset)
            if not self._day_matches(candidate_day):
                continue
            for hour in sorted(self.hours):
                for minute in sorted(self.minutes):
                    candidate = candidate_day.replace(hour=hour, minute=minute)
                    if candidate >= start:
                        return candidate
        raise ScheduleError(f"cron expression {self.expression!r} never matches")


def run_schedule(
    run_cycle: Callable[[], object],
    *,
    interval: float,
    cron: CronSchedule | None,
    clock: Clock,
    stop: threading.Event,
    max_cycles: int | None = None,
) -> int:
    """Run cycles until `stop` is set (or once, or `max_cycles`); returns cycles run.

    A cycle that raises is logged and the schedule goes on: one bad cycle must not end the
    descheduler.
    """
    if interval <= 0 and cron is None:
        _guarded(run_cycle)
        log.info("Cycle done; ran once, so exiting")
        return 1
    cycles = 0
    if interval > 0 and cron is not None:
        log.info("Both an interval and a cron expression are given: the interval wins")
    while not stop.is_set() and (max_cycles is None or cycles < max_cycles):
        if interval > 0:
            _guarded(run_cycle)
            cycles += 1
            if max_cycles is not None and cycles >= max_cycles:
                break
            log.info("Cycle done; the next in %gs", interval)
            if clock.sleep(interval, stop):
                break
        else:
            assert cron is not None
            now = clock.now()
            upcoming = cron.next_after(now)
            log.info("Next cycle at %s (cron %r)", upcoming.isoformat(), cron.expression)
            if clock.sleep((upcoming - now).total_seconds(), stop):
                break
            _guarded(run_cycle)
            cycles += 1
    return cycles


def _guarded(run_cycle: Callable[[], object]) -> None:
    try:
        run_cycle()
    except Exception:
        log.exception("Descheduling cycle failed; the next one will try again")
