"""The periodic loop: one reconcile every sync period, only while this replica leads.

The leader gate is a plain callable so that any election (the Lease elector of
`tas.adapters.cluster.leader`, or none) plugs in; it is asked before every cycle, and the
reconciler asks
it again before every write, so a replica that loses its lease stops writing at once.
A cycle that raises is logged and counted; the loop carries on with the next period.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from policy_controller.reconciler import CycleReport, Reconciler
from policy_controller.self_metrics import ControllerMetrics
from tas.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


def _always() -> bool:
    return True


class ControllerLoop:
    def __init__(
        self,
        reconciler: Reconciler,
        metrics: ControllerMetrics,
        *,
        sync_period: float,
        is_leader: Callable[[], bool] = _always,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if sync_period <= 0:
            raise ValueError("sync_period must be positive")
        self._reconciler = reconciler
        self._metrics = metrics
        self._sync_period = sync_period
        self._is_leader = is_leader
        self._clock = clock
        self._last_tick: datetime | None = None
        self._started = clock.now()

    @property
    def sync_period(self) -> float:
        return self._sync_period

    def tick(self) -> CycleReport | None:
        """One period: reconcile if leading; None when not leading or when the cycle failed."""
        self._last_tick = self._clock.now()
        leading = self._is_leader()
        self._metrics.leader.set(1 if leading else 0)
        if not leading:
            self._metrics.cycles.labels("not_leader").inc()
            return None
        try:
            return self._reconciler.reconcile()
        except Exception:  # one failed cycle must not end the loop; the next one retries
            self._metrics.cycles.labels("failed").inc()
            log.exception("Reconcile cycle failed")
            return None

    def run(self, stop: threading.Event) -> None:
        """Tick every sync period until `stop` is set (meant for a thread of its own)."""
        while not stop.is_set():
            started = self._clock.now()
            self.tick()
            spent = (self._clock.now() - started).total_seconds()
            self._clock.sleep(max(0.0, self._sync_period - spent), stop)

    def healthy(self) -> bool:
        """False when the loop has not ticked for several periods (stuck or dead)."""
        last = self._last_tick if self._last_tick is not None else self._started
        idle = (self._clock.now() - last).total_seconds()
        return idle <= max(5 * self._sync_period, 30.0)

    def ready(self) -> bool:
        return self._reconciler.ready
