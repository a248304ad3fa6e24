"""When cycles run: every interval, on a cron schedule, or once.

`--descheduling-interval` wins when both it and `--descheduling-interval-cron-expression` are
given (as upstream); neither (or interval 0 without cron) runs one cycle and returns. Durations
and cron expressions are parsed at the command line (`tas.durations`, `tas.cron`); this module
only keeps time, on an injected `Clock`, so tests (and the simulator) run schedules instantly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tas.clock import Clock
from tas.cron import CronSchedule

log = logging.getLogger(__name__)


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
