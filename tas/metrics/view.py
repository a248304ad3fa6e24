"""The metric view every component reads.

A view hands out `MetricColumns` (metric name -> node -> value) that hold only fresh, finite
values: stale or missing values are simply absent, so the pure rule engine never has to think
about time. Refreshing happens in the background; reading never waits on a fetch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from tas.types import MetricColumns, MetricName


class MetricView(Protocol):
    def columns(self) -> MetricColumns:
        """The current fresh values of every registered metric. Never blocks on I/O."""
        ...

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        """Replace the set of metric names to refresh (the names current policies use)."""
        ...

    @property
    def ready(self) -> bool:
        """True once a first refresh has completed (successfully or not)."""
        ...
