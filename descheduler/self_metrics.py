"""The descheduler's Prometheus metrics, registered on an injected registry.

Enough to draw the seed dashboards' panels: evictions by strategy, node, namespace and result;
per-node usage per signal; per-node classification over time; the low/high thresholds in force;
whether the circuit breaker holds evictions back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from descheduler.node_classes import Category, Classification
from tas.calibration import Calibration
from tas.runtime.self_metrics import MetricFactory
from tas.types import NodeName

#: Classification as a number, so a status-history panel can colour it.
CATEGORY_VALUE: Mapping[Category, float] = {
    Category.UNDERUTILIZED: -1.0,
    Category.APPROPRIATE: 0.0,
    Category.OVERUTILIZED: 1.0,
}


class DeschedulerMetrics:
    def __init__(self, *, registry: CollectorRegistry) -> None:
        declare = MetricFactory(registry)
        self.evictions = declare.counter(
            "tas_descheduler_evictions_total",
            "Evictions asked for (or, in Predictive mode, that would be), by result.",
            ["strategy", "node", "namespace", "result"],
        )
        self.node_usage = declare.gauge(
            "tas_descheduler_node_usage",
            "A node's usage per load-aware signal, 0..100.",
            ["node", "resource"],
        )
        self.node_classification = declare.gauge(
            "tas_descheduler_node_classification",
            "A node's load-aware class: -1 underutilized, 0 appropriately utilized, "
            "1 overutilized.",
            ["node"],
        )
        self.threshold = declare.gauge(
            "tas_descheduler_threshold",
            "The low (underutilized) and high (overutilized) thresholds in force, 0..100.",
            ["resource", "bound"],
        )
        self.circuit_breaker_open = declare.gauge(
            "tas_descheduler_circuit_breaker_open",
            "1 while too many nodes violate at once and every eviction is held back.",
        )
        self.pod_usage_unread = declare.counter(
            "tas_descheduler_pod_usage_unread_total",
            "Reads of per-pod usage that failed: LoadAware evicts nothing in a cycle whose read "
            "failed (a failing pipeline never causes an eviction).",
        )
        self.reserved_nodes = declare.gauge(
            "tas_descheduler_reserved_nodes",
            "Nodes kept NoSchedule while pods leave them to make room for a pending pod "
            "(MakeRoomForPending; in Predictive mode, those that would be).",
        )
        self.cycles = declare.counter(
            "tas_descheduler_cycles_total",
            "Descheduling cycles, by outcome (run, skipped).",
            ["outcome"],
        )
        buckets = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)
        self.cycle_seconds = declare.histogram(
            "tas_descheduler_cycle_duration_seconds",
            "Wall time of one descheduling cycle that ran (upstream: loop_duration_seconds).",
            buckets=buckets,
        )
        self.cycle_cpu_seconds = declare.histogram(
            "tas_descheduler_cycle_cpu_seconds",
            "CPU time the cycle's own thread spent in one cycle that ran (what sizes the "
            "descheduler's CPU request; the wall time also counts waits for other threads).",
            buckets=buckets,
        )
        self._classified: set[NodeName] = set()
        self.curve_servers = declare.gauge(
            "tas_descheduler_pressure_curve_servers",
            "A node's learned pressure curve: its effective server count (Erlang C at its "
            "utilization; its cores on the fallback).",
            ["node"],
        )
        self.curve_samples = declare.gauge(
            "tas_descheduler_pressure_curve_samples",
            "The informative (utilization, PSI) samples a node's curve is fitted on.",
            ["node"],
        )
        self.curve_fallback = declare.gauge(
            "tas_descheduler_pressure_curve_fallback",
            "1 while a node has too few samples and the shared model predicts for it.",
            ["node"],
        )
        self.observed_metric_lag = declare.gauge(
            "tas_descheduler_observed_metric_lag_seconds",
            "The 90th percentile of the CPU metrics' age when read (their own sample times).",
        )
        self.observed_startup = declare.gauge(
            "tas_descheduler_observed_startup_seconds",
            "The 90th percentile of pods' start-up (PodScheduled to Ready).",
        )
        self.payback_seconds = declare.gauge(
            "tas_descheduler_payback_seconds",
            "LoadAware's payback horizon in force (it follows the observed lag and start-up).",
        )
        #: What each node's curve gauges say now: only a change is set again (5,000 nodes).
        self._curved: dict[NodeName, tuple[int, int, bool]] = {}

    def count_eviction(self, *, strategy: str, node: str, namespace: str, result: str) -> None:
        self.evictions.labels(strategy, node, namespace, result).inc()

    def record_classification(self, classification: Classification) -> None:
        bounds = classification.thresholds
        for resource, value in bounds.low.items():
            self.threshold.labels(resource, "low").set(value)
        for resource, value in bounds.high.items():
            self.threshold.labels(resource, "high").set(value)
        current = set(classification.categories)
        for node in self._classified - current:
            # A node that left (or lost its metrics) must not keep showing an old class.
            self.node_classification.remove(node)
            for resource in bounds.low:
                with contextlib.suppress(KeyError):
                    self.node_usage.remove(node, resource)
        for node, category in classification.categories.items():
            self.node_classification.labels(node).set(CATEGORY_VALUE[category])
            for resource, value in classification.usages[node].items():
                self.node_usage.labels(node, resource).set(value)
        self._classified = current

    def record_calibration(self, calibration: Calibration) -> None:
        for node in self._curved.keys() - calibration.curves.keys():
            for gauge in (self.curve_servers, self.curve_samples, self.curve_fallback):
                with contextlib.suppress(KeyError):
                    gauge.remove(node)
        shown: dict[NodeName, tuple[int, int, bool]] = {}
        for node, curve in calibration.curves.items():
            now = shown[node] = (curve.servers, curve.samples, curve.fallback)
            before = self._curved.get(node)
            if now == before:
                continue
            if before is None or before[0] != now[0]:
                self.curve_servers.labels(node).set(curve.servers)
            if before is None or before[1] != now[1]:
                self.curve_samples.labels(node).set(curve.samples)
            if before is None or before[2] != now[2]:
                self.curve_fallback.labels(node).set(1 if curve.fallback else 0)
        self._curved = shown
        if calibration.metric_lag is not None:
            self.observed_metric_lag.set(calibration.metric_lag)
        if calibration.startup is not None:
            self.observed_startup.set(calibration.startup)
        if calibration.window is not None:
            self.payback_seconds.set(calibration.window)
