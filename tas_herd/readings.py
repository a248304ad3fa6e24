"""What the extender reads of herd control, bound in one place.

The extender asks herd control five things: the recent placements' estimates at each request,
each node's CPU cores and learned pressure curve (its `servers`), which nodes run nothing but
recent placements (a joined node without a value scores as a typical one), and what has been
learned, for /metrics. `herd_readings` binds them to the metric view the estimates are made on
and to the clock, once: `tas extender`, the simulator's ours and the page's scenario mode call
it, and the extender's service and application take the one value it returns. A new reading is
a field here and its use, not an edit at every place the extender is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tas.calibration import Calibration
from tas.types import MetricColumns, NodeName
from tas_herd.placements import Estimates, PlacementTracker, SampleTimes


@dataclass(frozen=True)
class HerdReadings:
    """Herd control as the extender reads it. Only `estimates` is needed: without `cores` the
    pressure estimates use the shared stall model, without `servers` no learned curve, and
    without `calibration` /metrics shows no calibration."""

    #: The recent placements' extra load per metric and node, as of now.
    estimates: Callable[[], Estimates]
    cores: Callable[[NodeName], float] | None = None
    servers: Callable[[NodeName], int] | None = None
    calibration: Callable[[], Calibration] | None = None
    #: The nodes running nothing but recent placements (`PlacementTracker.only_placed`): one
    #: without a value scores as a typical node, not as the worst (`tas.rules.score_values`).
    newcomers: Callable[[], frozenset[NodeName]] | None = None


class EstimatedView(Protocol):
    """What the estimates read of the metric view: its sample times and current columns."""

    def sample_times(self) -> SampleTimes: ...
    def columns(self) -> MetricColumns: ...


def herd_readings(
    tracker: PlacementTracker, view: EstimatedView, *, now: Callable[[], float]
) -> HerdReadings:
    """Everything `tracker` answers the extender, its estimates made on `view`'s sample times at
    `now` (each refresh's samples teaching the nodes' curves first)."""
    return HerdReadings(
        estimates=tracker.estimator(sample_times=view.sample_times, now=now, columns=view.columns),
        cores=tracker.cores,
        servers=tracker.servers,
        calibration=tracker.calibration,
        newcomers=tracker.only_placed,
    )
