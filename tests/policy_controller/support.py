"""Builders for the controller tests: nodes, pods, a metric view whose values age, a harness."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from policy_controller.reconciler import CycleReport, Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import ControllerSettings
from tas.breaker import DEFAULT_MAX_SHARE
from tas.cluster.model import Node
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.types import MetricColumns, MetricName, Namespace, NodeName
from tests import builders
from tests.instrumented_cluster import InstrumentedCluster

DEMO_NAMESPACE = Namespace("health-metric-demo")


#: Nodes with only the labels a test gives: the controller's label writes are compared whole.
make_node = functools.partial(builders.make_node, hostname=False)
#: The demo app's pods: in the demo namespace, linked to demo-policy.
make_pod = functools.partial(builders.make_pod, namespace=DEMO_NAMESPACE, policy="demo-policy")


class AgingMetricView:
    """A `MetricView` that keeps each value's sample time and serves only fresh ones.

    It implements the view contract (stale values are absent) the way the refreshing view does,
    with a clock the test moves.
    """

    def __init__(self, *, max_age: float, now: float = 1000.0) -> None:
        self.max_age = max_age
        self.now = now
        self.wanted: frozenset[MetricName] = frozenset()
        self.ready = True
        self._samples: dict[MetricName, dict[NodeName, tuple[float, float]]] = {}

    def set(self, metric: str, values: Mapping[str, float], *, at: float | None = None) -> None:
        when = self.now if at is None else at
        column = self._samples.setdefault(MetricName(metric), {})
        for node, value in values.items():
            column[NodeName(node)] = (float(value), when)

    def columns(self) -> MetricColumns:
        oldest = self.now - self.max_age
        return {
            metric: {
                node: value
                for node, (value, when) in column.items()
                if when >= oldest and math.isfinite(value)
            }
            for metric, column in self._samples.items()
        }

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        self.wanted = frozenset(names)


@dataclass
class Harness:
    """A controller (reconciler) over an in-memory cluster, with cluster-sourced policies."""

    cluster: InstrumentedCluster
    view: AgingMetricView
    store: PolicyStore = field(default_factory=PolicyStore)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    reconciler: Reconciler | None = None
    loader: ClusterPolicyLoader | None = None
    status_refresh_cycles: int = 0
    #: The controller's circuit breaker (`tas.breaker`); 1.0 turns it off.
    max_violating_share: float = DEFAULT_MAX_SHARE

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """A brand-new controller (no memory) on the same cluster and metrics."""
        self.store = PolicyStore()
        want_policy_metrics(self.store, self.view)  # as every command wires it
        self.loader = ClusterPolicyLoader(self.cluster, self.store)
        self.registry = CollectorRegistry()
        self.reconciler = Reconciler(
            cluster=self.cluster,
            policies=self.store,
            metric_view=self.view,
            metrics=ControllerMetrics(self.registry),
            settings=ControllerSettings(
                status_refresh_cycles=self.status_refresh_cycles,
                max_violating_node_share=self.max_violating_share,
            ),
            clock=builders.ManualClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        )

    def reconcile(self) -> CycleReport:
        assert self.reconciler is not None
        assert self.loader is not None
        self.loader.sync()
        return self.reconciler.reconcile()

    def node_labels(self, name: str) -> Mapping[str, str]:
        return self.cluster.get_node(NodeName(name)).labels

    def pod_labels(self, name: str, namespace: str = DEMO_NAMESPACE) -> Mapping[str, str]:
        return self.cluster.get_pod(Namespace(namespace), name).labels


def owned_state(cluster: InstrumentedCluster) -> dict[str, dict[str, str]]:
    """Every node's labels and annotations, to compare two runs."""
    return {
        node.name: {**node.labels, **{f"@{k}": v for k, v in node.annotations.items()}}
        for node in cluster.list_nodes()
    }


def replace_labels(node: Node, labels: Mapping[str, str]) -> Node:
    return dataclasses.replace(node, labels=dict(labels))
