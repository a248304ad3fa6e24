"""The in-memory cluster: the `Cluster` interface without Kubernetes.

`make run`, the simulator and the tests of the policy controller and the descheduler run on it,
so it behaves like the API server where those components could tell the difference:

- writes touch only the keys given and bump a cluster-wide resourceVersion; a no-op write
  changes nothing and notifies no one;
- an eviction gets the Eviction API's PodDisruptionBudget verdict (`tas_inmemory.disruption`:
  REFUSED is the HTTP 429 of the real API) and an owned pod that is evicted comes back as its
  controller would recreate it (`tas_inmemory.owners`);
- listeners hear about every change, like a watch;
- Events and evictions are kept in order, for the dashboard, the simulator and the tests.

`before_write` is a seam for instrumentation: it is called, under the lock, with the kind of
every write the components ask for (including refused and no-op ones); counting writes and
injecting failures (a `ClusterError` it raises fails the write; an eviction then returns
FAILED) live with whoever needs them, not here.

One lock guards all state; listeners are called after it is released, from the writing thread.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import (
    ChangeListener,
    ChangeListeners,
    ChangeType,
    ClusterChange,
    ClusterError,
    ConflictError,
    EvictionOutcome,
    EvictionResult,
    NotFoundError,
    PolicyDocument,
    ResourceKind,
    policy_key_of,
)
from tas.cluster.model import (
    NamespaceInfo,
    Node,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    Taint,
)
from tas.types import Namespace, NodeName, PodKey, PolicyKey
from tas_inmemory.disruption import Budget, Verdict, judge_eviction
from tas_inmemory.owners import replacement_for


class WriteKind(enum.StrEnum):
    """The kinds of write the components make, as `before_write` hears them."""

    NODE_LABELS = "node_labels"
    POD_LABELS = "pod_labels"
    NODE_TAINTS = "node_taints"
    POLICY_STATUS = "policy_status"
    EVENTS = "events"
    EVICTIONS = "evictions"


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    involved: ObjectReference
    reason: str
    message: str
    type: str  # Normal | Warning
    time: datetime


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    namespace: Namespace
    name: str
    reason: str
    outcome: EvictionOutcome
    node: NodeName | None
    time: datetime
    #: The pod the owner created in its place, if any.
    replacement: str | None = None


class InMemoryCluster:
    """Nodes, pods, PDBs and TASPolicy documents in memory; see the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock = SYSTEM_CLOCK,
        recreate_evicted: bool = True,
        before_write: Callable[[WriteKind], None] | None = None,
    ) -> None:
        self._clock = clock
        self._recreate_evicted = recreate_evicted
        self._before_write = before_write
        self._lock = threading.RLock()
        self._version = itertools.count(1)
        self._last_version = 0
        self._ids = itertools.count(1)
        self._nodes: dict[NodeName, Node] = {}
        self._pods: dict[tuple[Namespace, str], Pod] = {}
        self._pdbs: dict[tuple[Namespace, str], PodDisruptionBudget] = {}
        self._policies: dict[PolicyKey, dict[str, Any]] = {}
        self._events: list[RecordedEvent] = []
        self._evictions: list[EvictionRecord] = []
        self._listeners = ChangeListeners()
        # What only some descheduler configurations read (see `set_extras`).
        self._priority_classes: dict[str, int] = {}
        self._namespaces: dict[str, NamespaceInfo] = {}
        self._pvcs: dict[tuple[Namespace, str], PersistentVolumeClaim] = {}
        self._node_metrics: dict[NodeName, Mapping[str, float]] = {}
        #: `list_nodes`' answer until a node is written: the scheduler model and the
        #: contenders list the nodes for every pod they place.
        self._listed_nodes: tuple[Node, ...] | None = None
        #: `list_pods`' answer and the version it was listed at: every write of a pod moves
        #: the version, and the components list the pods many times between two writes.
        self._listed_pods: tuple[int, tuple[Pod, ...]] | None = None
        self._pod_metrics: dict[PodKey, Mapping[str, float]] = {}

    # ----------------------------------------------------------------- reads (Cluster)

    def list_nodes(self) -> Sequence[Node]:
        with self._lock:
            if self._listed_nodes is None:
                self._listed_nodes = tuple(self._nodes[name] for name in sorted(self._nodes))
            return self._listed_nodes

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        with self._lock:
            listed = self._listed_pods
            if listed is None or listed[0] != self._last_version:
                pods = self._pods
                listed = self._listed_pods = (
                    self._last_version,
                    tuple(pods[key] for key in sorted(pods)),
                )
            if node is None:
                return listed[1]
            return tuple(pod for pod in listed[1] if pod.node_name == node)

    def list_policy_documents(self) -> Sequence[PolicyDocument]:
        with self._lock:
            return tuple(
                PolicyDocument(key, copy.deepcopy(self._policies[key]))
                for key in sorted(self._policies)
            )

    def list_pdbs(self) -> Sequence[PodDisruptionBudget]:
        with self._lock:
            return tuple(self._pdbs[key] for key in sorted(self._pdbs))

    def get_priority_class_value(self, name: str) -> int | None:
        with self._lock:
            return self._priority_classes.get(name)

    def list_namespaces(self) -> Sequence[NamespaceInfo]:
        with self._lock:
            return tuple(self._namespaces[name] for name in sorted(self._namespaces))

    def list_persistent_volume_claims(self) -> Sequence[PersistentVolumeClaim]:
        with self._lock:
            return tuple(self._pvcs[key] for key in sorted(self._pvcs))

    def list_node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        with self._lock:
            return dict(self._node_metrics)

    def list_pod_metrics(self) -> Mapping[PodKey, Mapping[str, float]]:
        with self._lock:
            return dict(self._pod_metrics)

    def get_node(self, name: NodeName) -> Node:
        with self._lock:
            return self._node(name)

    def get_pod(self, namespace: Namespace, name: str) -> Pod:
        with self._lock:
            return self._pod(namespace, name)

    def get_pdb(self, namespace: Namespace, name: str) -> PodDisruptionBudget:
        with self._lock:
            try:
                return self._pdbs[(namespace, name)]
            except KeyError:
                raise NotFoundError(f"poddisruptionbudget {namespace}/{name} not found") from None

    # ----------------------------------------------------------------- writes (Cluster)

    def patch_node_labels(
        self,
        node: NodeName,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        removed = tuple(remove)
        with self._lock:
            self._write(WriteKind.NODE_LABELS)
            current = self._node(node)
            labels = _patched(current.labels, set_labels, removed)
            updated = dataclasses.replace(current, labels=labels)
            if annotations:
                notes = {k: v for k, v in annotations.items() if v is not None}
                gone = tuple(k for k, v in annotations.items() if v is None)
                updated = dataclasses.replace(
                    updated, annotations=_patched(current.annotations, notes, gone)
                )
            changed = self._put_node(updated)
        self._notify(changed)

    def patch_pod_labels(
        self,
        namespace: Namespace,
        name: str,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
    ) -> None:
        removed = tuple(remove)
        with self._lock:
            self._write(WriteKind.POD_LABELS)
            current = self._pod(namespace, name)
            labels = _patched(current.labels, set_labels, removed)
            changed = self._put_pod(dataclasses.replace(current, labels=labels))
        self._notify(changed)

    def set_node_taints(self, node: NodeName, taints: Sequence[Taint]) -> None:
        with self._lock:
            self._write(WriteKind.NODE_TAINTS)
            current = self._node(node)
            changed = self._put_node(dataclasses.replace(current, taints=tuple(taints)))
        self._notify(changed)

    def update_policy_status(self, key: PolicyKey, status: Mapping[str, Any]) -> None:
        with self._lock:
            self._write(WriteKind.POLICY_STATUS)
            document = self._policies.get(key)
            if document is None:
                raise NotFoundError(f"taspolicy {key} not found")
            if document.get("status") == status:
                return  # the API server does not bump resourceVersion for a no-op write
            document["status"] = copy.deepcopy(dict(status))
            # A status write is a MODIFIED event with an unchanged generation, as in Kubernetes.
            document["metadata"]["resourceVersion"] = self._next_version()
            change = ClusterChange(
                ResourceKind.POLICY, ChangeType.MODIFIED, key.name, key.namespace
            )
        self._notify([change])

    def emit_event(
        self, involved: ObjectReference, *, reason: str, message: str, warning: bool = False
    ) -> None:
        with self._lock:
            self._write(WriteKind.EVENTS)
            self._events.append(
                RecordedEvent(
                    involved, reason, message, "Warning" if warning else "Normal", self._clock.now()
                )
            )

    def evict_pod(
        self,
        namespace: Namespace,
        name: str,
        *,
        reason: str,
        grace_period_seconds: int | None = None,
    ) -> EvictionResult:
        """Evict at once (there is no kubelet to honour a grace period here)."""
        with self._lock:
            try:
                self._write(WriteKind.EVICTIONS)
            except ClusterError as error:
                pod = self._pods.get((namespace, name))
                self._record_eviction(namespace, name, reason, EvictionOutcome.FAILED, pod)
                return EvictionResult(EvictionOutcome.FAILED, str(error))
            pod = self._pods.get((namespace, name))
            if pod is None:
                result = EvictionResult(
                    EvictionOutcome.NOT_FOUND, f'pods "{name}" not found in {namespace}'
                )
                self._record_eviction(namespace, name, reason, result.outcome, None)
                return result
            outcome, message, changes = self._evict(pod, reason)
        self._notify(changes)
        return EvictionResult(outcome, message)

    # ----------------------------------------------------------------- change notification

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    # ----------------------------------------------------------------- setup and inspection

    def add_node(self, node: Node) -> Node:
        return self._store_node(node, new=True)

    def update_node(self, node: Node) -> Node:
        """Replace a node wholesale (what a kubelet or an administrator would change)."""
        return self._store_node(node, new=False)

    def _store_node(self, node: Node, *, new: bool) -> Node:
        with self._lock:
            if new and node.name in self._nodes:
                raise ConflictError(f"node {node.name} already exists")
            if not new:
                self._node(node.name)  # NotFoundError for a node that is not there
            changed = self._put_node(node)
            stored = self._nodes[node.name]
        self._notify(changed)
        return stored

    def remove_node(self, name: NodeName) -> None:
        with self._lock:
            self._node(name)
            del self._nodes[name]
            self._listed_nodes = None
            self._next_version()
        self._notify([ClusterChange(ResourceKind.NODE, ChangeType.DELETED, name)])

    def add_pod(self, pod: Pod) -> Pod:
        """Store a pod; an empty uid or creation time is filled in."""
        with self._lock:
            if (pod.namespace, pod.name) in self._pods:
                raise ConflictError(f"pod {pod.namespace}/{pod.name} already exists")
            changed = self._write_pod(
                pod,
                ChangeType.ADDED,
                uid=pod.uid or self._new_uid(),
                creation_timestamp=pod.creation_timestamp or self._clock.now(),
            )
            stored = self._pods[(pod.namespace, pod.name)]
        self._notify(changed)
        return stored

    def bind_pod(self, namespace: Namespace, name: str, node: NodeName) -> Pod:
        """Place a pending pod on a node and start it (what the scheduler and kubelet do)."""
        with self._lock:
            pod = self._pod(namespace, name)
            self._node(node)
            if pod.node_name is not None:
                raise ConflictError(f"pod {namespace}/{name} is already bound to {pod.node_name}")
            now = self._clock.now()
            changed = self._write_pod(
                pod,
                ChangeType.MODIFIED,
                node_name=node,
                phase="Running",
                start_time=now,
                conditions=(
                    *(c for c in pod.conditions if c.type != "PodScheduled"),
                    PodCondition("PodScheduled", "True", last_transition_time=now),
                ),
            )
            stored = self._pods[(namespace, name)]
        self._notify(changed)
        return stored

    def mark_ready(self, namespace: Namespace, name: str) -> None:
        """The pod's containers have started and it serves (what the kubelet reports): its
        `Ready` condition turns true now. A pod gone or not bound is left alone."""
        with self._lock:
            pod = self._pods.get((namespace, name))
            if pod is None or pod.node_name is None:
                return
            ready = PodCondition("Ready", "True", last_transition_time=self._clock.now())
            conditions = (*(c for c in pod.conditions if c.type != "Ready"), ready)
            # Only the conditions may change: compared alone, the pod copied once.
            changed = (
                []
                if conditions == pod.conditions
                else self._write_pod(pod, ChangeType.MODIFIED, conditions=conditions)
            )
        self._notify(changed)

    def remove_pod(self, namespace: Namespace, name: str) -> None:
        """Delete a pod outright (no owner recreates it; that only follows an eviction)."""
        with self._lock:
            self._pod(namespace, name)
            del self._pods[(namespace, name)]
            self._next_version()
        self._notify([ClusterChange(ResourceKind.POD, ChangeType.DELETED, name, namespace)])

    def kill_pod(self, namespace: Namespace, name: str) -> Pod | None:
        """End a pod outside the Eviction API, as the kubelet's node-pressure eviction (an OOM
        kill) or the pod garbage collector (its node is gone) does: no PodDisruptionBudget is
        asked, nothing is recorded as an eviction, and the pod's controller recreates it as
        after an eviction. Returns the replacement, if any."""
        with self._lock:
            changes, replacement = self._delete_and_replace(self._pod(namespace, name))
        self._notify(changes)
        return replacement

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        key = (pdb.namespace, pdb.name)
        with self._lock:
            if key in self._pdbs:
                raise ConflictError(f"poddisruptionbudget {pdb.namespace}/{pdb.name} exists")
            self._pdbs[key] = pdb
            self._next_version()
        self._notify([ClusterChange(ResourceKind.PDB, ChangeType.ADDED, pdb.name, pdb.namespace)])

    def set_extras(
        self,
        *,
        priority_classes: Mapping[str, int] | None = None,
        namespaces: Iterable[NamespaceInfo] | None = None,
        pvcs: Iterable[PersistentVolumeClaim] | None = None,
        node_metrics: Mapping[NodeName, Mapping[str, float]] | None = None,
        pod_metrics: Mapping[PodKey, Mapping[str, float]] | None = None,
    ) -> None:
        """Replace what is given of the objects only some descheduler configurations read:
        PriorityClasses, Namespaces, PersistentVolumeClaims and the metrics server's usage."""
        with self._lock:
            if priority_classes is not None:
                self._priority_classes = dict(priority_classes)
            if namespaces is not None:
                self._namespaces = {n.name: n for n in namespaces}
            if pvcs is not None:
                self._pvcs = {(c.namespace, c.name): c for c in pvcs}
            if node_metrics is not None:
                self._node_metrics = dict(node_metrics)
            if pod_metrics is not None:
                self._pod_metrics = dict(pod_metrics)

    def apply_policy(self, document: Mapping[str, Any]) -> PolicyKey:
        """Create or replace a TASPolicy document (as `kubectl apply` would); keeps status.

        The document is stored as given (it is validated by whoever reads it), with
        `metadata.namespace`, `resourceVersion` and `generation` filled in.
        """
        key = policy_key_of(document)
        stored = copy.deepcopy(dict(document))
        metadata = dict(stored.get("metadata") or {})
        metadata["namespace"] = key.namespace
        with self._lock:
            previous = self._policies.get(key)
            generation = 1
            if previous is not None:
                generation = int(previous["metadata"].get("generation", 1))
                if previous.get("spec") != stored.get("spec"):
                    generation += 1
                if "status" in previous:
                    stored["status"] = previous["status"]
            metadata["generation"] = generation
            metadata["resourceVersion"] = self._next_version()
            metadata.setdefault("uid", self._new_uid())
            stored["metadata"] = metadata
            self._policies[key] = stored
        kind = ChangeType.ADDED if previous is None else ChangeType.MODIFIED
        self._notify([ClusterChange(ResourceKind.POLICY, kind, key.name, key.namespace)])
        return key

    def delete_policy(self, key: PolicyKey) -> None:
        with self._lock:
            if self._policies.pop(key, None) is None:
                raise NotFoundError(f"taspolicy {key} not found")
            self._next_version()
        self._notify(
            [ClusterChange(ResourceKind.POLICY, ChangeType.DELETED, key.name, key.namespace)]
        )

    def policy_status(self, key: PolicyKey) -> Mapping[str, Any] | None:
        """The status last written for a policy (None when never written)."""
        with self._lock:
            document = self._policies.get(key)
            if document is None:
                raise NotFoundError(f"taspolicy {key} not found")
            status = document.get("status")
            return copy.deepcopy(status) if status is not None else None

    @property
    def events(self) -> Sequence[RecordedEvent]:
        with self._lock:
            return tuple(self._events)

    @property
    def evictions(self) -> Sequence[EvictionRecord]:
        """Every eviction asked for, in order, with its outcome."""
        with self._lock:
            return tuple(self._evictions)

    # ----------------------------------------------------------------- internals (lock held)

    def _write(self, kind: WriteKind) -> None:
        if self._before_write is not None:
            self._before_write(kind)

    def _next_version(self) -> str:
        self._last_version = next(self._version)
        return str(self._last_version)

    @property
    def version(self) -> int:
        """The last resourceVersion handed out: it changes with every write, so a reader may
        keep what it derived from the objects until it does."""
        with self._lock:
            return self._last_version

    def _new_uid(self) -> str:
        return f"uid-{next(self._ids):06d}"

    def _node(self, name: NodeName) -> Node:
        try:
            return self._nodes[name]
        except KeyError:
            raise NotFoundError(f'nodes "{name}" not found') from None

    def _pod(self, namespace: Namespace, name: str) -> Pod:
        try:
            return self._pods[(namespace, name)]
        except KeyError:
            raise NotFoundError(f'pods "{name}" not found in {namespace}') from None

    def _put_node(self, node: Node) -> list[ClusterChange]:
        previous = self._nodes.get(node.name)
        if previous is not None and _same(previous, node):
            return []  # the API server does not bump resourceVersion for a no-op patch
        self._nodes[node.name] = dataclasses.replace(node, resource_version=self._next_version())
        self._listed_nodes = None
        kind = ChangeType.ADDED if previous is None else ChangeType.MODIFIED
        return [ClusterChange(ResourceKind.NODE, kind, node.name)]

    def _put_pod(self, pod: Pod) -> list[ClusterChange]:
        key = (pod.namespace, pod.name)
        previous = self._pods.get(key)
        if previous is not None and _same(previous, pod):
            return []
        self._pods[key] = dataclasses.replace(pod, resource_version=self._next_version())
        kind = ChangeType.ADDED if previous is None else ChangeType.MODIFIED
        return [ClusterChange(ResourceKind.POD, kind, pod.name, pod.namespace)]

    def _write_pod(self, pod: Pod, kind: ChangeType, **changes: Any) -> list[ClusterChange]:
        """`_put_pod` of the pod with `changes`, where they are known to change it (a new pod,
        a pending pod bound, conditions compared first): one copy, not one for the changes and
        one for the version."""
        key = (pod.namespace, pod.name)
        self._pods[key] = dataclasses.replace(pod, **changes, resource_version=self._next_version())
        return [ClusterChange(ResourceKind.POD, kind, pod.name, pod.namespace)]

    def _evict(self, pod: Pod, reason: str) -> tuple[EvictionOutcome, str, list[ClusterChange]]:
        budgets = [
            b
            for b in self._pdbs.values()
            if b.namespace == pod.namespace and b.selector.matches(pod.labels)
        ]
        verdict = judge_eviction(
            phase=pod.phase,
            terminating=pod.deletion_timestamp is not None,
            budgets=[Budget(b.name, b.disruptions_allowed) for b in budgets],
        )
        if verdict.verdict is not Verdict.EVICT:
            outcome = (
                EvictionOutcome.REFUSED
                if verdict.verdict is Verdict.REFUSE
                else EvictionOutcome.FAILED
            )
            self._record_eviction(pod.namespace, pod.name, reason, outcome, pod)
            return outcome, verdict.message, []
        changes: list[ClusterChange] = []
        if verdict.charged is not None:
            budget = self._pdbs[(pod.namespace, verdict.charged.name)]
            self._pdbs[(budget.namespace, budget.name)] = dataclasses.replace(
                budget, disruptions_allowed=budget.disruptions_allowed - 1
            )
            changes.append(
                ClusterChange(ResourceKind.PDB, ChangeType.MODIFIED, budget.name, budget.namespace)
            )
        deleted, replacement = self._delete_and_replace(pod)
        changes.extend(deleted)
        self._record_eviction(
            pod.namespace,
            pod.name,
            reason,
            EvictionOutcome.EVICTED,
            pod,
            replacement.name if replacement else None,
        )
        return EvictionOutcome.EVICTED, "", changes

    def _delete_and_replace(self, pod: Pod) -> tuple[list[ClusterChange], Pod | None]:
        """Delete a stored pod and, when evicted pods are recreated, store what its controller
        would create instead: the changes, and the replacement as stored (if any)."""
        del self._pods[(pod.namespace, pod.name)]
        self._next_version()
        changes = [ClusterChange(ResourceKind.POD, ChangeType.DELETED, pod.name, pod.namespace)]
        replacement = None
        if self._recreate_evicted:
            replacement = replacement_for(
                pod,
                new_suffix=lambda: f"{next(self._ids):05d}",
                name_taken=lambda name: (pod.namespace, name) in self._pods,
                new_uid=self._new_uid,
                now=self._clock.now(),
            )
        if replacement is None:
            return changes, None
        changes.extend(self._put_pod(replacement))
        return changes, self._pods[(pod.namespace, replacement.name)]

    def _record_eviction(
        self,
        namespace: Namespace,
        name: str,
        reason: str,
        outcome: EvictionOutcome,
        pod: Pod | None,
        replacement: str | None = None,
    ) -> None:
        self._evictions.append(
            EvictionRecord(
                namespace,
                name,
                reason,
                outcome,
                pod.node_name if pod else None,
                self._clock.now(),
                replacement,
            )
        )

    def _notify(self, changes: Sequence[ClusterChange]) -> None:
        if not changes:
            return
        listeners = self._listeners.current()
        for change in changes:
            for listener in listeners:
                listener(change)


def _patched(
    labels: Mapping[str, str], set_labels: Mapping[str, str], remove: Sequence[str]
) -> Mapping[str, str]:
    result = dict(labels)
    for key in remove:
        result.pop(key, None)
    result.update(set_labels)
    return MappingProxyType(result)


def _same(a: Node | Pod, b: Node | Pod) -> bool:
    """Equal but for the resourceVersion. A write usually starts from the stored object, so
    the versions agree and no copy is made (a copy is most of what a write costs here)."""
    if a.resource_version == b.resource_version:
        return a == b
    return a == dataclasses.replace(b, resource_version=a.resource_version)
