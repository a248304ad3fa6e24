"""A metric view over fixed values: for tests, benchmarks and the simulator's snapshots."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from tas.types import MetricColumns, MetricName, NodeName


class StaticMetricView:
    """Serves the given values as they are (non-finite values are dropped as unusable)."""

    def __init__(self, values: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self._columns: dict[MetricName, dict[NodeName, float]] = {}
        self.wanted: frozenset[MetricName] = frozenset()
        for metric, column in (values or {}).items():
            self.set_column(MetricName(metric), column)

    def set_column(self, metric: MetricName, column: Mapping[str, float]) -> None:
        self._columns = {
            **self._columns,
            metric: {NodeName(n): float(v) for n, v in column.items() if math.isfinite(v)},
        }

    def columns(self) -> MetricColumns:
        return self._columns

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        self.wanted = frozenset(names)

    @property
    def ready(self) -> bool:
        return True
