"""The extender's own Prometheus metrics, registered on an injected registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ExtenderMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.request_seconds = Histogram(
            "tas_extender_request_duration_seconds",
            "Time to answer a scheduler extender request, by verb.",
            ["verb"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.decisions = Counter(
            "tas_extender_decisions_total",
            "Filter and prioritize decisions, by verb, policy and outcome.",
            ["verb", "policy", "outcome"],
            registry=registry,
        )
        self.filtered_nodes = Counter(
            "tas_extender_filtered_nodes_total",
            "Nodes removed by filter because they violate a dontschedule strategy, by policy.",
            ["policy"],
            registry=registry,
        )
        self.rejected_requests = Counter(
            "tas_extender_rejected_requests_total",
            "Requests answered with a client error (bad body, type, size), by verb and status.",
            ["verb", "status"],
            registry=registry,
        )
