"""Time, injected: every loop and every cooldown reads a `Clock`, so tests control time."""

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
