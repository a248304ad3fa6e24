"""Time, injected: every loop, cooldown, timestamp and lease reads a `Clock`, so tests (and the
simulator's virtual time) control it.

One protocol for the whole project. `now()` is wall time (timezone-aware UTC): what is written
into Events, Leases and metric timestamps, and what cooldowns and pod ages are measured on.
`sleep()` waits, or returns at once when `stop` is set, so a loop stops promptly on SIGTERM;
a virtual clock advances instead of waiting.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        """Wait up to `seconds`; True if `stop` was set meanwhile."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()
