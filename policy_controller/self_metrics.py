"""The controller's own Prometheus metrics, registered in the registry it is given."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry

from tas.runtime.self_metrics import MetricFactory
from tas.types import PolicyKey


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        metrics = MetricFactory(registry)
        self.reconcile_seconds = metrics.histogram(
            "tas_controller_reconcile_duration_seconds",
            "Time one reconcile cycle took (reads, evaluation and writes).",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self.cycles = metrics.counter(
            "tas_controller_cycles_total",
            "Reconcile cycles by outcome (done, not_ready, not_leader, failed).",
            ["outcome"],
        )
        self.label_writes = metrics.counter(
            "tas_controller_label_writes_total",
            "Label patches sent, by object kind (node, pod).",
            ["kind"],
        )
        self.status_writes = metrics.counter(
            "tas_controller_status_writes_total",
            "TASPolicy status updates sent.",
        )
        self.events = metrics.counter(
            "tas_controller_events_total",
            "Kubernetes Events emitted, by reason.",
            ["reason"],
        )
        self.write_errors = metrics.counter(
            "tas_controller_write_errors_total",
            "Writes the cluster refused or failed, by kind (node, pod, status, event).",
            ["kind"],
        )
        self.violating_nodes = metrics.gauge(
            "tas_controller_violating_nodes",
            "Nodes violating a policy's strategy at the last evaluation.",
            ["namespace", "policy", "strategy"],
        )
        self.breaker_open = metrics.gauge(
            "tas_controller_circuit_breaker_open",
            "1 while a policy's circuit breaker holds new violating labels (more than half of "
            "the nodes with values violate at once), else 0.",
            ["namespace", "policy"],
        )
        self.leader = metrics.gauge(
            "tas_controller_leader",
            "1 while this replica holds the leader lease (or runs without election).",
        )
        self._reported: set[tuple[str, str, str]] = set()
        self._breakers: set[tuple[str, str]] = set()

    def set_violating(self, counts: Iterable[tuple[PolicyKey, str, int]]) -> None:
        """Replace the violating-node gauges; series of deleted policies disappear."""
        current: set[tuple[str, str, str]] = set()
        for key, strategy, count in counts:
            labels = (str(key.namespace), str(key.name), strategy)
            current.add(labels)
            self.violating_nodes.labels(*labels).set(count)
        for labels in self._reported - current:
            self.violating_nodes.remove(*labels)
        self._reported = current

    def set_breakers(self, policies: Iterable[tuple[PolicyKey, bool]]) -> None:
        """Each evaluated policy's breaker, open (1) or closed (0); deleted policies' series
        disappear."""
        current: set[tuple[str, str]] = set()
        for key, held in policies:
            labels = (str(key.namespace), str(key.name))
            current.add(labels)
            self.breaker_open.labels(*labels).set(1 if held else 0)
        for labels in self._breakers - current:
            self.breaker_open.remove(*labels)
        self._breakers = current
