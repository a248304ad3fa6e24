"""Cron schedules, by a well-kept library (cronsim) rather than a parser of our own.

The descheduler's `--descheduling-interval-cron-expression` is upstream's: five fields (minute
hour day-of-month month day-of-week) with names, ranges, lists, steps and the classic rule that
a restricted day-of-month and day-of-week match when either does. cronsim implements exactly
that (it is the evaluator healthchecks.io runs), so all this module adds is our error type and
the one question the schedule loop asks: when is the next run?

Errors:
    CronError (ValueError)   an expression that cannot be parsed or never matches
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronsim import CronSim, CronSimError

FIELDS = "minute hour day-of-month month day-of-week"


class CronError(ValueError):
    """A cron expression that cannot be used."""


@dataclass(frozen=True)
class CronSchedule:
    expression: str

    @classmethod
    def parse(cls, expression: str) -> CronSchedule:
        if len(expression.split()) != 5:
            raise CronError(f"cron expression {expression!r} needs 5 fields ({FIELDS})")
        schedule = cls(expression)
        try:
            # Parsing happens on construction; an impossible date (Feb 30) is refused there too.
            CronSim(expression, datetime(2000, 1, 1))
        except CronSimError as error:
            raise CronError(f"cron expression {expression!r}: {error}") from error
        return schedule

    def next_after(self, moment: datetime) -> datetime:
        """The first matching minute strictly after `moment` (same timezone)."""
        try:
            return next(CronSim(self.expression, moment))
        except (CronSimError, StopIteration) as error:
            raise CronError(f"cron expression {self.expression!r} never matches") from error
