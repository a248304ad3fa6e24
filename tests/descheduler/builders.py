"""Builders for the descheduler's tests: nodes, pods, configs and a cycle over an in-memory
cluster, each stating only what a test cares about (`make_pod(name, node=..., apply=...)`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from descheduler.config import DeschedulerConfig, parse_config
from descheduler.cycle import Descheduler, Mode
from descheduler.framework import PodUsageSource
from descheduler.self_metrics import DeschedulerMetrics
from tas.cluster.model import Node, OwnerReference, Pod, QoSClass
from tas.metrics.static import StaticMetricView
from tas.policies.model import TASPolicy
from tas.types import Namespace, NodeName, PolicyKey
from tests.instrumented_cluster import InstrumentedCluster

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """Time that moves only when told to (or when a schedule sleeps)."""

    def __init__(self, start: datetime = START) -> None:
        self.current = start
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        self.slept.append(seconds)
        self.advance(seconds)
        return stop.is_set()


def make_node(
    name: str,
    *,
    cpu: float = 8,
    memory: float = 32e9,
    labels: Mapping[str, str] | None = None,
    apply: Callable[[Node], Node] | None = None,
) -> Node:
    node = Node(
        name=NodeName(name),
        labels={"kubernetes.io/hostname": name, **(labels or {})},
        allocatable={"cpu": cpu, "memory": memory, "pods": 110},
    )
    return apply(node) if apply else node


def make_pod(
    name: str,
    *,
    node: str | None = "node-a",
    namespace: str = "default",
    owner: str | None = "rs",
    owner_kind: str = "ReplicaSet",
    cpu: float = 0.0,
    labels: Mapping[str, str] | None = None,
    apply: Callable[[Pod], Pod] | None = None,
) -> Pod:
    owners = (OwnerReference(owner_kind, owner, controller=True),) if owner else ()
    pod = Pod(
        namespace=Namespace(namespace),
        name=name,
        uid=f"uid-{namespace}-{name}",
        labels=dict(labels or {}),
        node_name=NodeName(node) if node else None,
        owners=owners,
        requests={"cpu": cpu} if cpu else {},
        qos_class=QoSClass.BURSTABLE if cpu else QoSClass.BEST_EFFORT,
        creation_timestamp=START - timedelta(hours=1),
    )
    return apply(pod) if apply else pod


def replace(**changes: Any) -> Callable[[Any], Any]:
    """A mutator for `apply=`: `make_pod("p", apply=replace(priority=5))`."""
    return lambda obj: dataclasses.replace(obj, **changes)


def policy_config(
    *plugins: str,
    args: Mapping[str, Mapping[str, Any]] | None = None,
    evictor: Mapping[str, Any] | None = None,
    **top: Any,
) -> DeschedulerConfig:
    """A one-profile config enabling `plugins` (deschedule or balance, wherever they belong)."""
    balance = {"RemoveDuplicates", "LoadAware", "LowNodeUtilization", "SoftTainter"}
    plugin_config = [{"name": "DefaultEvictor", "args": dict(evictor or {})}]
    plugin_config += [{"name": name, "args": dict(a)} for name, a in (args or {}).items()]
    document = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "evictionCooldownSeconds": 0,
        **top,
        "profiles": [
            {
                "name": "test",
                "pluginConfig": plugin_config,
                "plugins": {
                    "deschedule": {"enabled": [p for p in plugins if p not in balance]},
                    "balance": {"enabled": [p for p in plugins if p in balance]},
                },
            }
        ],
    }
    return parse_config(document)


def make_descheduler(
    cluster: InstrumentedCluster,
    config: DeschedulerConfig,
    *,
    metrics: Mapping[str, Mapping[str, float]] | StaticMetricView | None = None,
    policies: Mapping[PolicyKey, TASPolicy] | None = None,
    mode: Mode = Mode.AUTOMATIC,
    clock: FakeClock | None = None,
    registry: CollectorRegistry | None = None,
    pod_usage: PodUsageSource | None = None,
) -> Descheduler:
    view = metrics if isinstance(metrics, StaticMetricView) else StaticMetricView(metrics or {})
    found = dict(policies or {})
    return Descheduler(
        config=config,
        cluster=cluster,
        metric_view=view,
        policies=lambda: found,
        mode=mode,
        clock=clock or FakeClock(),
        metrics=DeschedulerMetrics(registry=registry or CollectorRegistry()),
        pod_usage=pod_usage,
    )


def cluster_with(*nodes: Node, pods: tuple[Pod, ...] = ()) -> InstrumentedCluster:
    cluster = InstrumentedCluster(clock=FakeClock(START))
    for node in nodes:
        cluster.add_node(node)
    for pod in pods:
        cluster.add_pod(pod)
    return cluster
