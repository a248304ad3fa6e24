"""A read-only view of a cluster: its reads, and no write."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tas.cluster.interface import Cluster, ClusterError, EvictionResult, PolicyDocument
from tas.cluster.model import (
    NamespaceInfo,
    Node,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Taint,
)
from tas.types import Namespace, NodeName, PodKey, PolicyKey


class ReadOnlyCluster:
    """A `Cluster` whose reads are the wrapped one's and whose writes never happen: a dry
    run (`descheduler.cycle.Descheduler.dry_run`, what `tas explain` asks) must not label,
    taint, evict or record anything. Events are dropped (a dry cycle's circuit breaker records
    some); any other write is a ClusterError naming `why` the cluster is read-only."""

    def __init__(self, cluster: Cluster, *, why: str = "read-only") -> None:
        self._cluster = cluster
        self._why = why

    def list_nodes(self) -> Sequence[Node]:
        return self._cluster.list_nodes()

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        return self._cluster.list_pods(node=node)

    def list_policy_documents(self) -> Sequence[PolicyDocument]:
        return self._cluster.list_policy_documents()

    def list_pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._cluster.list_pdbs()

    def get_priority_class_value(self, name: str) -> int | None:
        return self._cluster.get_priority_class_value(name)

    def list_namespaces(self) -> Sequence[NamespaceInfo]:
        return self._cluster.list_namespaces()

    def list_persistent_volume_claims(self) -> Sequence[PersistentVolumeClaim]:
        return self._cluster.list_persistent_volume_claims()

    def list_node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        return self._cluster.list_node_metrics()

    def list_pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        return self._cluster.list_pod_metrics()

    def patch_node_labels(
        self,
        node: NodeName,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        raise ClusterError(f"{self._why} does not label nodes")

    def patch_pod_labels(
        self,
        namespace: Namespace,
        name: str,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
    ) -> None:
        raise ClusterError(f"{self._why} does not label pods")

    def set_node_taints(self, node: NodeName, taints: Sequence[Taint]) -> None:
        raise ClusterError(f"{self._why} does not taint nodes")

    def update_policy_status(self, key: PolicyKey, status: Mapping[str, Any]) -> None:
        raise ClusterError(f"{self._why} does not write policy status")

    def emit_event(
        self, involved: ObjectReference, *, reason: str, message: str, warning: bool = False
    ) -> None:
        return None

    def evict_pod(
        self,
        namespace: Namespace,
        name: str,
        *,
        reason: str,
        grace_period_seconds: int | None = None,
    ) -> EvictionResult:
        raise ClusterError(f"{self._why} does not evict")
