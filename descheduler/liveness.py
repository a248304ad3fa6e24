"""Whether the descheduler's cycles still run: what its liveness probe asks.

The descheduler's work happens in one schedule thread. If that thread stops (a call that never
returns, a deadlock), the process and its metrics port stay up and nothing restarts it: the
cluster silently stops being descheduled. So `/healthz` on the metrics port fails once no cycle
has ended by the time `MISSED_CYCLES` scheduled starts after the last one have passed, plus
`GRACE_SECONDS` for a cycle's own work; the kubelet then restarts the container.

The schedule is the one `descheduler.schedule.run_schedule` keeps: every `interval` seconds, or
on a cron schedule (then the allowance follows the cron's own gaps, a weekend included). A
run-once descheduler exits after its cycle, so it is always live. Time comes from the injected
`Clock`, so tests move it.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from tas.clock import Clock
from tas.cron import CronSchedule

#: Scheduled starts that may pass without a cycle ending before the descheduler is not live.
MISSED_CYCLES = 3
#: Added to the allowance: a cycle's own duration (its API calls and fetches have deadlines).
GRACE_SECONDS = 60.0


class CycleLiveness:
    """Cycles end (`cycle_ended`); the probe asks `live()`. Safe across threads."""

    def __init__(
        self,
        *,
        interval: float,
        cron: CronSchedule | None,
        clock: Clock,
        missed: int = MISSED_CYCLES,
        grace_seconds: float = GRACE_SECONDS,
    ) -> None:
        self._interval = interval
        self._cron = cron
        self._clock = clock
        self._missed = missed
        self._grace = timedelta(seconds=grace_seconds)
        self._lock = threading.Lock()
        # Counted from the start: the first cycle waits for the caches and the policies.
        self._last = clock.now()

    @property
    def runs_once(self) -> bool:
        return self._interval <= 0 and self._cron is None

    def cycle_ended(self) -> None:
        """A cycle ended, whatever its outcome: the schedule goes on."""
        with self._lock:
            self._last = self._clock.now()

    def deadline(self) -> datetime | None:
        """When the descheduler stops being live without another cycle; None when it runs once."""
        if self.runs_once:
            return None
        with self._lock:
            moment = self._last
        if self._interval > 0:  # the interval wins over a cron expression, as in run_schedule
            return moment + timedelta(seconds=self._interval * self._missed) + self._grace
        assert self._cron is not None
        for _ in range(self._missed):
            moment = self._cron.next_after(moment)
        return moment + self._grace

    def live(self) -> bool:
        deadline = self.deadline()
        return deadline is None or self._clock.now() <= deadline
