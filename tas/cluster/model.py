"""The parts of Kubernetes objects this project reads, as small immutable values.

Adapters translate API objects into these (and only these fields), so the controller, the
descheduler and the in-memory cluster share one vocabulary and never touch raw API dicts.
Resource quantities are floats in base units (CPU in cores, memory in bytes).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tas.types import Namespace, NodeName
from tas.vocabulary import CONFIG_SOURCE_ANNOTATION, MIRROR_ANNOTATION


class TaintEffect(enum.StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str = ""


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector requirement or label selector expression."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.operator == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together; `match_fields` supports `metadata.name` only."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, node: Node) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term matches nothing, as in Kubernetes
        fields = {"metadata.name": node.name}
        return all(r.matches(node.labels) for r in self.match_expressions) and all(
            r.matches(fields) for r in self.match_fields
        )


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()  # empty: the pod's own namespace


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """One preferredDuringSchedulingIgnoredDuringExecution node affinity term."""

    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    label_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    min_domains: int | None = None
    node_affinity_policy: str = ""  # Honor | Ignore; empty: the default (Honor)
    node_taints_policy: str = ""  # Honor | Ignore; empty: the default (Ignore)


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """What the kubelet reports of one container: restarts and its current state."""

    name: str = ""
    restart_count: int = 0
    waiting_reason: str | None = None  # set while the container is waiting
    terminated_reason: str | None = None  # set once the container terminated
    exit_code: int | None = None  # with terminated_reason


@dataclass(frozen=True, slots=True)
class PodCondition:
    type: str
    status: str
    reason: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


class QoSClass(enum.StrEnum):
    BEST_EFFORT = "BestEffort"
    BURSTABLE = "Burstable"
    GUARANTEED = "Guaranteed"


@dataclass(frozen=True, slots=True)
class Volume:
    name: str
    kind: str  # emptyDir | hostPath | persistentVolumeClaim | configMap | secret | ...
    claim_name: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    name: NodeName
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, float] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: Namespace
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_name: NodeName | None = None
    phase: str = "Running"  # Pending | Running | Succeeded | Failed | Unknown
    owners: tuple[OwnerReference, ...] = ()
    priority: int = 0
    priority_class_name: str = ""
    qos_class: QoSClass = QoSClass.BEST_EFFORT
    #: Summed container requests (max'd with init containers), base units.
    requests: Mapping[str, float] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: requiredDuringSchedulingIgnoredDuringExecution node affinity (terms ORed); empty: none.
    required_node_affinity: tuple[NodeSelectorTerm, ...] = ()
    required_pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    volumes: tuple[Volume, ...] = ()
    container_restarts: int = 0
    init_container_restarts: int = 0
    creation_timestamp: datetime | None = None
    start_time: datetime | None = None
    deletion_timestamp: datetime | None = None
    resource_version: str = ""
    #: The images of the (regular) containers, in spec order.
    container_images: tuple[str, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    ephemeral_container_statuses: tuple[ContainerStatus, ...] = ()
    #: status.reason (Evicted, NodeLost, Shutdown, ...), empty when none.
    reason: str = ""
    conditions: tuple[PodCondition, ...] = ()
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    #: spec.priority was set (it is, on every pod the API server admitted).
    has_priority: bool = True
    #: spec.resourceClaims is not empty (dynamic resource allocation).
    has_resource_claims: bool = False
    #: The resources any container or init container names in its requests.
    requested_resources: frozenset[str] = frozenset()

    @property
    def controller(self) -> OwnerReference | None:
        return controller_of(self.owners)

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def bound_at(self) -> float | None:
        return bind_time_of(self.conditions, self.start_time)

    @property
    def ready_at(self) -> float | None:
        return ready_time_of(self.conditions)

    @property
    def is_mirror(self) -> bool:
        return MIRROR_ANNOTATION in self.annotations

    @property
    def is_static(self) -> bool:
        source = self.annotations.get(CONFIG_SOURCE_ANNOTATION)
        return source is not None and source != "api"


def bind_time_of(conditions: tuple[PodCondition, ...], start_time: datetime | None) -> float | None:
    """When a pod was bound (Unix seconds): its PodScheduled condition's transition, else its
    start time; None when neither says."""
    for condition in conditions:
        if (
            condition.type == "PodScheduled"
            and condition.status == "True"
            and condition.last_transition_time is not None
        ):
            return condition.last_transition_time.timestamp()
    return start_time.timestamp() if start_time is not None else None


def ready_time_of(conditions: tuple[PodCondition, ...]) -> float | None:
    """When a pod became ready (Unix seconds): its true Ready condition's transition; None
    while it is not ready or the condition carries no time. With its bind time, a pod's
    start-up (`tas.calibration.delays`)."""
    for condition in conditions:
        if (
            condition.type == "Ready"
            and condition.status == "True"
            and condition.last_transition_time is not None
        ):
            return condition.last_transition_time.timestamp()
    return None


def controller_of(owners: tuple[OwnerReference, ...]) -> OwnerReference | None:
    """The owner marked controller, else the first owner, else None."""
    for owner in owners:
        if owner.controller:
            return owner
    return owners[0] if owners else None


@dataclass(frozen=True, slots=True)
class PodSummary:
    """The part of a pod that placements (herd control, `tas_herd.placements`) and the policy
    controller's pod labels read, with the names a `Pod` gives them: what the extender's and
    the controller's pod caches hold (`PodFields.SUMMARY`), a few hundred bytes where a `Pod`
    takes a couple of kilobytes."""

    namespace: Namespace
    name: str
    node_name: NodeName | None = None
    phase: str = "Pending"
    labels: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[OwnerReference, ...] = ()
    requests: Mapping[str, float] = field(default_factory=dict)
    terminating: bool = False
    #: As `Pod.bound_at`.
    bound_at: float | None = None
    #: As `Pod.ready_at`: with `bound_at`, the pod's start-up (herd control's window).
    ready_at: float | None = None
    resource_version: str = ""

    @property
    def controller(self) -> OwnerReference | None:
        return controller_of(self.owners)


#: A pod's owner key: namespace, owner kind, owner name (kind "Pod" and the pod's own name for
#: a pod without a controller). What herd control shares usage estimates by and what the
#: descheduler's cooldown and "one pod per owner per cycle" count.
WorkloadKey = tuple[str, str, str]


def workload_of(pod: Pod | PodSummary) -> WorkloadKey:
    """The workload the pod belongs to: its controller (a ReplicaSet, a StatefulSet, ...), or
    the pod itself when nothing controls it (its pods share one usage estimate)."""
    owner = pod.controller
    if owner is None:
        return (pod.namespace, "Pod", pod.name)
    return (pod.namespace, owner.kind, owner.name)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: Namespace
    name: str
    selector: LabelSelector
    disruptions_allowed: int = 0
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    """A namespace: its name and labels (what namespace label selectors match)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: Namespace
    name: str
    storage_class_name: str = ""


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """What an Event is about."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"
