"""The page's log, told each step's decisions as the closed loop makes them.

`tas_inmemory.loop.ClosedLoop` calls its observers at the points of a step; this one hands the
page's `Recorder` what happened there, on the loop's clock: the inputs the controller is about
to act on (after the view refreshed), the descheduler's cycle, the scheduler's placements. What
a whole tick produced (the state, a history point) the driver gives it (`Recorder.observe`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from descheduler.cycle import CycleReport
from tas.clock import Clock
from tas.types import MetricColumns
from tas_dashboard.recorder import Recorder
from tas_inmemory.loop import LoopObserver
from tas_inmemory.scheduler import ScheduleResult


class ColumnView(Protocol):
    def columns(self) -> MetricColumns: ...


class RecorderObserver(LoopObserver):
    def __init__(self, recorder: Recorder, view: ColumnView, clock: Clock) -> None:
        self._recorder = recorder
        self._view = view
        self._clock = clock

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def synced(self, t: float) -> None:
        self._recorder.observe_inputs(self._now(), self._view.columns())

    def cycled(self, t: float, report: CycleReport) -> None:
        self._recorder.observe_cycle(self._now(), report)

    def placed(self, t: float, placements: Sequence[ScheduleResult]) -> None:
        self._recorder.observe_placements(self._now(), placements)
