"""The cluster interface the policy controller and the descheduler are written against.

Two implementations: `tas.adapters.cluster.kubernetes` (the official client, list+watch caches) and
`tas_inmemory.cluster` (the in-memory cluster for `make run`, the simulator and tests). Reads come
from a local cache kept current by watches, so a reconcile never LISTs per policy; writes go
to the API and touch only the keys this project owns.

Errors:
    ClusterError                 anything the cluster refused or failed to do
      NotFoundError              the object does not exist (any more)
      ConflictError              optimistic concurrency lost; retry with fresh data
      TransientClusterError      the API could not be reached or answered 5xx; retry later
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tas.cluster.model import (
    NamespaceInfo,
    Node,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Taint,
)
from tas.types import Namespace, NodeName, PodKey, PolicyKey, PolicyName


class ClusterError(Exception):
    """Anything the cluster refused or failed to do."""


class NotFoundError(ClusterError):
    """The object does not exist (any more)."""


class ConflictError(ClusterError):
    """Optimistic concurrency lost: read again and retry."""


class TransientClusterError(ClusterError):
    """The API could not be reached or answered 5xx: retry later."""


class EvictionOutcome(enum.StrEnum):
    EVICTED = "evicted"
    #: HTTP 429: a PodDisruptionBudget refused it. A normal answer, not an error.
    REFUSED = "refused"
    NOT_FOUND = "not_found"
    FAILED = "failed"


class PodFields(enum.Enum):
    """Which fields of each pod an adapter's pod cache keeps."""

    #: Every field of the model: what the descheduler's plugins and evictor read.
    ALL = "all"
    #: What placements (herd control) and the controller's pod labels read (`PodSummary`): the
    #: extender and the policy controller.
    SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class EvictionResult:
    outcome: EvictionOutcome
    message: str = ""


@dataclass(frozen=True, slots=True)
class PolicyDocument:
    """A TASPolicy object as stored in the cluster (validated later by `tas.policies.model`)."""

    key: PolicyKey
    body: Mapping[str, Any]

    @property
    def resource_version(self) -> str:
        metadata = self.body.get("metadata")
        return str(metadata.get("resourceVersion", "")) if isinstance(metadata, Mapping) else ""


def policy_key_of(document: Mapping[str, Any]) -> PolicyKey:
    """The key of a TASPolicy document (namespace defaults to `default`, as the API does)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        raise ValueError("a TASPolicy document needs metadata.name")
    namespace = metadata.get("namespace") or "default"
    return PolicyKey(Namespace(str(namespace)), PolicyName(str(metadata["name"])))


class Cluster(Protocol):
    # Reads: from a cache kept current by watches; cheap, never a LIST per call.
    def list_nodes(self) -> Sequence[Node]: ...

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]: ...

    def list_policy_documents(self) -> Sequence[PolicyDocument]: ...

    def list_pdbs(self) -> Sequence[PodDisruptionBudget]: ...

    # Reads only some configurations need (the descheduler's): not cached, one API call each,
    # made at most once per cycle. `ClusterError` when the API cannot answer.
    def get_priority_class_value(self, name: str) -> int | None:
        """The value of the PriorityClass `name`; None when there is no such class."""
        ...

    def list_namespaces(self) -> Sequence[NamespaceInfo]: ...

    def list_persistent_volume_claims(self) -> Sequence[PersistentVolumeClaim]: ...

    def list_node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        """The metrics server's usage per node (metrics.k8s.io NodeMetrics), base units."""
        ...

    def list_pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        """The metrics server's usage per pod, its containers summed, base units."""
        ...

    # Writes: each touches only the keys given.
    def patch_node_labels(
        self,
        node: NodeName,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        """Set and remove labels; `annotations` (value None removes) go in the same patch."""
        ...

    def patch_pod_labels(
        self,
        namespace: Namespace,
        name: str,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
    ) -> None: ...

    def set_node_taints(self, node: NodeName, taints: Sequence[Taint]) -> None:
        """Replace the node's taints (with its resourceVersion: `ConflictError` if it moved)."""
        ...

    def update_policy_status(self, key: PolicyKey, status: Mapping[str, Any]) -> None: ...

    def emit_event(
        self, involved: ObjectReference, *, reason: str, message: str, warning: bool = False
    ) -> None: ...

    def evict_pod(
        self,
        namespace: Namespace,
        name: str,
        *,
        reason: str,
        grace_period_seconds: int | None = None,
    ) -> EvictionResult:
        """Evict through the Eviction API; `grace_period_seconds` overrides the pod's own."""
        ...


class ResourceKind(enum.StrEnum):
    NODE = "node"
    POD = "pod"
    POLICY = "policy"
    PDB = "pdb"


class ChangeType(enum.StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class ClusterChange:
    """One object changed in the cluster's cache (watch-like; carries no object, read it)."""

    kind: ResourceKind
    type: ChangeType
    name: str
    namespace: str = ""


ChangeListener = Callable[[ClusterChange], None]


class ObservableCluster(Cluster, Protocol):
    """A cluster that tells listeners about changes (both implementations are observable)."""

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call `listener` after every change (from the changing thread); returns unsubscribe."""
        ...


class ChangeListeners:
    """The listeners of an `ObservableCluster`, for both implementations to keep one way.

    `current()` is a snapshot: the caller tells each listener outside any lock, so a listener
    may read the cluster (or subscribe another) without deadlocking.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[ChangeListener] = []

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def current(self) -> tuple[ChangeListener, ...]:
        with self._lock:
            return tuple(self._listeners)
