"""The virtual clock: `tas.clock.Clock` for every component, moved by the simulator alone.

Time starts at a fixed instant, so two runs with the same seed write the same timestamps, and
only advances when the simulator says so: a component that sleeps gets its time back at once
(the loop, not the component, decides what happens next).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

#: Where every simulation starts: fixed, so timestamps repeat run after run.
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


class VirtualClock:
    def __init__(self, start: datetime = EPOCH) -> None:
        self._start = start
        self._base = start.timestamp()
        self.elapsed = 0.0

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self.elapsed)

    def time(self) -> float:
        """Unix seconds (`now()` as a float): sample times and estimates are Unix seconds."""
        return self._base + self.elapsed

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        if not stop.is_set():
            self.elapsed += max(0.0, seconds)
        return stop.is_set()

    def advance_to(self, elapsed: float) -> None:
        if elapsed < self.elapsed:
            raise ValueError(f"time runs forward: {elapsed} < {self.elapsed}")
        self.elapsed = elapsed

    def epoch(self, elapsed: float) -> float:
        """The Unix time of a moment `elapsed` seconds into the run."""
        return self._base + elapsed
