"""A component's own Prometheus metrics, declared on the registry it is given.

Every component takes its registry (never the process-wide default), so a test or an embedded
run gets metrics of its own; `MetricFactory` binds that registry once for all of a component's
declarations.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class MetricFactory:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, documentation, labels, registry=self.registry)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, documentation, labels, registry=self.registry)

    def histogram(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        *,
        buckets: Sequence[float],
    ) -> Histogram:
        return Histogram(name, documentation, labels, buckets=buckets, registry=self.registry)
