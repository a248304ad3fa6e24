"""Kubernetes API objects (plain JSON dicts) to the model of `tas.cluster.model`, and back.

The adapter reads raw JSON (not the client's generated classes) so one path serves built-in
and custom resources alike, and a field the model does not need is never parsed. Parsing is
lenient: a malformed quantity or timestamp is skipped rather than losing the whole object.

The converters of what caches hold many of (pods, nodes) take a `SharedValues`: equal parts of
different objects (a workload's labels, owner, requests, tolerations; node names; namespaces)
then come out as one shared object, which is what keeps a 150,000-pod cache small. Annotations
are kept only where a component reads them (`POD_ANNOTATIONS_READ`, `NODE_ANNOTATIONS_READ`).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tas.cluster import api_types as api
from tas.cluster.model import (
    ContainerStatus,
    LabelSelector,
    NamespaceInfo,
    Node,
    NodeSelectorTerm,
    OwnerReference,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PodCondition,
    PodDisruptionBudget,
    PodSummary,
    PreferredSchedulingTerm,
    QoSClass,
    Requirement,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpreadConstraint,
    Volume,
    bind_time_of,
    ready_time_of,
)
from tas.cluster.sharing import NoSharing, SharedValues
from tas.quantity import QuantityError, parse_quantity
from tas.types import Namespace, NodeName
from tas.vocabulary import NODE_ANNOTATIONS_READ, POD_ANNOTATIONS_READ

log = logging.getLogger(__name__)

Json = Mapping[str, Any]
#: Words many objects repeat (namespaces, node names, owners, phases, images) are one string
#: each: `sys.intern` keeps one copy while anything holds it (interned strings are mortal on
#: CPython 3.11, and again on 3.12.6 and later; 3.12.0-3.12.5 kept them forever).
intern = sys.intern

_EMPTY_JSON: Json = {}

#: The decoders of the typed kinds (`tas.cluster.api_types`).
PODS = api.Decoding(api.Pod)
NODES = api.Decoding(api.Node)
_NO_METADATA = api.ObjectMeta()
_NO_POD_SPEC = api.PodSpec()
_NO_POD_STATUS = api.PodStatus()
_NO_NODE_SPEC = api.NodeSpec()
_NO_NODE_STATUS = api.NodeStatus()

#: Converting one object alone: nothing to share with.
NO_SHARING: SharedValues = NoSharing()


# `dict`, not `Mapping`, in the checks below: parsed JSON is made of dicts, and an ABC check
# costs ten times as much, on every field of every watch event.


def _map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else _EMPTY_JSON


def _sections(raw: Json) -> tuple[Json, Json, Json]:
    """An object's metadata, spec and status, each {} where it is missing or not an object."""
    return _dict(raw.get("metadata")), _dict(raw.get("spec")), _dict(raw.get("status"))


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)  # Python 3.11 reads the API's trailing Z
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _quantity(text: str | float) -> float:
    """A quantity's value, remembered: a cluster's pods repeat a few dozen of them."""
    return parse_quantity(text)


def quantities(values: Any) -> dict[str, float]:
    result: dict[str, float] = {}
    for name, text in _dict(values).items():
        try:
            result[str(name)] = _quantity(text)
        except (QuantityError, TypeError):
            log.warning("Ignoring unparsable quantity %s=%r", name, text)
    return result


def taint_from_api(raw: Json) -> Taint | None:
    try:
        effect = TaintEffect(raw.get("effect", ""))
    except ValueError:
        return None
    return Taint(key=str(raw.get("key", "")), effect=effect, value=str(raw.get("value") or ""))


def taint_to_api(taint: Taint) -> dict[str, str]:
    body = {"key": taint.key, "effect": str(taint.effect)}
    if taint.value:
        body["value"] = taint.value
    return body


def _annotations(
    value: Mapping[str, str] | None, read: frozenset[str], shared: SharedValues
) -> Mapping[str, str]:
    """The annotations of `value` a component reads (`read`), the others dropped."""
    if not value:
        return {}
    return shared.strings({k: v for k, v in value.items() if k in read})


def node_from_api(raw: Json | api.Node, shared: SharedValues = NO_SHARING) -> Node:
    node = raw if isinstance(raw, api.Node) else NODES.convert(dict(raw))
    metadata = node.metadata or _NO_METADATA
    spec = node.spec or _NO_NODE_SPEC
    status = node.status or _NO_NODE_STATUS
    ready = any(c.type == "Ready" and c.status == "True" for c in status.conditions or ())
    taints = (_taint(t) for t in spec.taints or ())
    return Node(
        name=NodeName(intern(metadata.name)),
        labels=shared.strings(metadata.labels or {}),
        annotations=_annotations(metadata.annotations, NODE_ANNOTATIONS_READ, shared),
        taints=shared.value(tuple(t for t in taints if t is not None)),
        allocatable=shared.numbers(quantities(status.allocatable)),
        unschedulable=bool(spec.unschedulable),
        ready=ready,
        resource_version=metadata.resource_version,
    )


def _taint(taint: api.Taint) -> Taint | None:
    try:
        effect = TaintEffect(taint.effect)
    except ValueError:
        return None
    return Taint(key=taint.key, effect=effect, value=taint.value or "")


def _requirements(raw: Any) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            key=str(_dict(r).get("key", "")),
            operator=str(_dict(r).get("operator", "")),
            values=tuple(str(v) for v in _list(_dict(r).get("values"))),
        )
        for r in _list(raw)
    )


def label_selector_from_api(raw: Any) -> LabelSelector:
    raw = _dict(raw)
    return LabelSelector(
        match_labels=_map(raw.get("matchLabels")),
        match_expressions=_requirements(raw.get("matchExpressions")),
    )


def _requests(container: api.Container) -> dict[str, float]:
    return quantities(container.resources.requests if container.resources else None)


def _limits(container: api.Container) -> dict[str, float]:
    return quantities(container.resources.limits if container.resources else None)


def pod_requests(spec: api.PodSpec) -> dict[str, float]:
    """Effective requests as the scheduler counts them: sum of containers, max'd with each
    init container, plus the pod overhead."""
    total: dict[str, float] = {}
    for container in spec.containers or ():
        for name, value in _requests(container).items():
            total[name] = total.get(name, 0.0) + value
    for container in spec.init_containers or ():
        for name, value in _requests(container).items():
            total[name] = max(total.get(name, 0.0), value)
    for name, value in quantities(spec.overhead).items():
        total[name] = total.get(name, 0.0) + value
    return total


def qos_class(spec: api.PodSpec) -> QoSClass:
    """The QoS class the kubelet would assign, for pods whose status does not say."""
    containers = [*(spec.containers or ()), *(spec.init_containers or ())]
    requests = [_requests(c) for c in containers]
    limits = [_limits(c) for c in containers]
    compute = ("cpu", "memory")
    if not any(
        any(k in compute for k in {**req, **lim}) for req, lim in zip(requests, limits, strict=True)
    ):
        return QoSClass.BEST_EFFORT
    guaranteed = all(
        all(name in lim and req.get(name, lim[name]) == lim[name] for name in compute)
        for req, lim in zip(requests, limits, strict=True)
    )
    return QoSClass.GUARANTEED if guaranteed else QoSClass.BURSTABLE


def _selector_term(raw: Any) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=_requirements(_dict(raw).get("matchExpressions")),
        match_fields=_requirements(_dict(raw).get("matchFields")),
    )


def _node_affinity(spec: api.PodSpec) -> tuple[NodeSelectorTerm, ...]:
    affinity = _dict(_dict(spec.affinity).get("nodeAffinity"))
    required = _dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    return tuple(_selector_term(term) for term in _list(required.get("nodeSelectorTerms")))


def _preferred_node_affinity(spec: api.PodSpec) -> tuple[PreferredSchedulingTerm, ...]:
    affinity = _dict(_dict(spec.affinity).get("nodeAffinity"))
    return tuple(
        PreferredSchedulingTerm(
            weight=_int(_dict(term).get("weight")),
            preference=_selector_term(_dict(term).get("preference")),
        )
        for term in _list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    )


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _topology_spread(spec: api.PodSpec) -> tuple[TopologySpreadConstraint, ...]:
    found = []
    for raw in spec.topology_spread_constraints or ():
        c = _dict(raw)
        selector = c.get("labelSelector")
        min_domains = c.get("minDomains")
        found.append(
            TopologySpreadConstraint(
                max_skew=_int(c.get("maxSkew"), 1),
                topology_key=str(c.get("topologyKey") or ""),
                when_unsatisfiable=str(c.get("whenUnsatisfiable") or "DoNotSchedule"),
                label_selector=(
                    label_selector_from_api(selector) if isinstance(selector, dict) else None
                ),
                match_label_keys=tuple(str(k) for k in _list(c.get("matchLabelKeys"))),
                min_domains=_int(min_domains) if min_domains is not None else None,
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or ""),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or ""),
            )
        )
    return tuple(found)


def _container_statuses(
    statuses: list[api.ContainerStatus] | None, shared: SharedValues
) -> tuple[ContainerStatus, ...]:
    found = []
    for status in statuses or ():
        state = status.state
        waiting = state.waiting if state is not None else None
        terminated = state.terminated if state is not None else None
        found.append(
            shared.value(
                ContainerStatus(
                    name=intern(status.name),
                    restart_count=status.restart_count,
                    waiting_reason=(waiting.reason or "") if waiting is not None else None,
                    terminated_reason=(
                        (terminated.reason or "") if terminated is not None else None
                    ),
                    exit_code=(terminated.exit_code or 0) if terminated is not None else None,
                )
            )
        )
    return shared.value(tuple(found))


def _conditions(
    conditions: Iterable[api.PodCondition] | None, shared: SharedValues
) -> tuple[PodCondition, ...]:
    # Each pod's own: their transition times differ. Their words are shared.
    return tuple(
        PodCondition(
            type=intern(c.type),
            status=intern(c.status),
            reason=intern(c.reason or ""),
            last_transition_time=parse_time(c.last_transition_time),
        )
        for c in conditions or ()
    )


def _requested_resources(spec: api.PodSpec) -> frozenset[str]:
    return frozenset(
        name
        for c in (*(spec.containers or ()), *(spec.init_containers or ()))
        if c.resources is not None and c.resources.requests
        for name in c.resources.requests
    )


def _anti_affinity(spec: api.PodSpec) -> tuple[PodAffinityTerm, ...]:
    anti = _dict(_dict(spec.affinity).get("podAntiAffinity"))
    return tuple(
        PodAffinityTerm(
            label_selector=label_selector_from_api(_dict(term).get("labelSelector")),
            topology_key=str(_dict(term).get("topologyKey", "")),
            namespaces=tuple(str(n) for n in _list(_dict(term).get("namespaces"))),
        )
        for term in _list(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))
    )


def _volume(volume: api.Volume) -> Volume:
    # Not shared: the service account token's volume has a name of its own in every pod.
    kind = next(
        (name for field, name in _VOLUME_SOURCES.items() if getattr(volume, field) is not None),
        "other",
    )
    claim = volume.persistent_volume_claim
    return Volume(name=volume.name, kind=kind, claim_name=claim.claim_name if claim else "")


#: The struct's field of each volume source the model names, and the model's (the API's) name.
_VOLUME_SOURCES = {
    "empty_dir": "emptyDir",
    "host_path": "hostPath",
    "persistent_volume_claim": "persistentVolumeClaim",
    "config_map": "configMap",
    "secret": "secret",
    "projected": "projected",
    "downward_api": "downwardAPI",
    "ephemeral": "ephemeral",
}


def _restarts(statuses: list[api.ContainerStatus] | None) -> int:
    return sum(s.restart_count for s in statuses or ())


def _owners(metadata: api.ObjectMeta, shared: SharedValues) -> tuple[OwnerReference, ...]:
    return shared.value(
        tuple(
            shared.value(
                OwnerReference(
                    kind=intern(o.kind),
                    name=intern(o.name),
                    uid=intern(o.uid),
                    controller=bool(o.controller),
                )
            )
            for o in metadata.owner_references or ()
        )
    )


def _tolerations(spec: api.PodSpec, shared: SharedValues) -> tuple[Toleration, ...]:
    return shared.value(
        tuple(
            Toleration(
                key=t.key or "",
                operator=t.operator or "Equal",
                value=t.value or "",
                effect=t.effect or "",
            )
            for t in spec.tolerations or ()
        )
    )


def _node_name(spec: api.PodSpec, shared: SharedValues) -> NodeName | None:
    return NodeName(intern(spec.node_name)) if spec.node_name else None


def _pod_parts(raw: Json | api.Pod) -> tuple[api.ObjectMeta, api.PodSpec, api.PodStatus]:
    pod = raw if isinstance(raw, api.Pod) else PODS.convert(dict(raw))
    return pod.metadata or _NO_METADATA, pod.spec or _NO_POD_SPEC, pod.status or _NO_POD_STATUS


def pod_from_api(raw: Json | api.Pod, shared: SharedValues = NO_SHARING) -> Pod:
    """Every field of the model (what the descheduler's plugins and evictor read)."""
    metadata, spec, status = _pod_parts(raw)
    try:
        qos = QoSClass(status.qos_class or "")
    except ValueError:
        qos = qos_class(spec)
    containers = spec.containers or ()
    return Pod(
        namespace=Namespace(intern(metadata.namespace or "default")),
        name=metadata.name,
        uid=metadata.uid,
        labels=shared.strings(metadata.labels or {}),
        annotations=_annotations(metadata.annotations, POD_ANNOTATIONS_READ, shared),
        node_name=_node_name(spec, shared),
        phase=intern(status.phase or "Pending"),
        owners=_owners(metadata, shared),
        priority=spec.priority or 0,
        priority_class_name=intern(spec.priority_class_name or ""),
        qos_class=qos,
        requests=shared.numbers(pod_requests(spec)),
        node_selector=shared.strings(spec.node_selector or {}),
        required_node_affinity=_node_affinity(spec),
        required_pod_anti_affinity=_anti_affinity(spec),
        tolerations=_tolerations(spec, shared),
        volumes=tuple(_volume(v) for v in spec.volumes or ()),
        container_restarts=_restarts(status.container_statuses),
        init_container_restarts=_restarts(status.init_container_statuses),
        creation_timestamp=parse_time(metadata.creation_timestamp),
        start_time=parse_time(status.start_time),
        deletion_timestamp=parse_time(metadata.deletion_timestamp),
        resource_version=metadata.resource_version,
        container_images=shared.value(tuple(intern(c.image) for c in containers)),
        container_statuses=_container_statuses(status.container_statuses, shared),
        init_container_statuses=_container_statuses(status.init_container_statuses, shared),
        ephemeral_container_statuses=_container_statuses(
            status.ephemeral_container_statuses, shared
        ),
        reason=status.reason or "",
        conditions=_conditions(status.conditions, shared),
        preferred_node_affinity=_preferred_node_affinity(spec),
        topology_spread_constraints=_topology_spread(spec),
        has_priority=spec.priority is not None,
        has_resource_claims=bool(spec.resource_claims),
        requested_resources=shared.value(_requested_resources(spec)),
    )


def pod_summary_from_api(raw: Json | api.Pod, shared: SharedValues = NO_SHARING) -> PodSummary:
    """Only what placements (herd control) and the controller's pod labels read: the
    extender's and the controller's caches (its bind and Ready times: herd control's window
    follows the pods' start-up)."""
    metadata, spec, status = _pod_parts(raw)
    read = [c for c in status.conditions or () if c.type in ("PodScheduled", "Ready")]
    conditions = _conditions(read, shared)
    bound_at = bind_time_of(conditions, parse_time(status.start_time))
    return PodSummary(
        namespace=Namespace(intern(metadata.namespace or "default")),
        name=metadata.name,
        node_name=_node_name(spec, shared),
        phase=intern(status.phase or "Pending"),
        labels=shared.strings(metadata.labels or {}),
        owners=_owners(metadata, shared),
        requests=shared.numbers(pod_requests(spec)),
        terminating=metadata.deletion_timestamp is not None,
        bound_at=bound_at,
        ready_at=ready_time_of(conditions),
        resource_version=metadata.resource_version,
    )


def namespace_from_api(raw: Json) -> NamespaceInfo:
    metadata = _dict(raw.get("metadata"))
    return NamespaceInfo(name=str(metadata.get("name", "")), labels=_map(metadata.get("labels")))


def pvc_from_api(raw: Json) -> PersistentVolumeClaim:
    metadata, spec, _ = _sections(raw)
    return PersistentVolumeClaim(
        namespace=Namespace(str(metadata.get("namespace", "default"))),
        name=str(metadata.get("name", "")),
        storage_class_name=str(spec.get("storageClassName") or ""),
    )


def metrics_usage_from_api(raw: Json) -> dict[str, float]:
    """A NodeMetrics' `usage`, or the sum of a PodMetrics' containers' `usage` (base units)."""
    if "containers" in raw:
        total: dict[str, float] = {}
        for container in _list(raw.get("containers")):
            for name, value in quantities(_dict(container).get("usage")).items():
                total[name] = total.get(name, 0.0) + value
        return total
    return quantities(raw.get("usage"))


def pdb_from_api(raw: Json) -> PodDisruptionBudget:
    metadata, spec, status = _sections(raw)
    return PodDisruptionBudget(
        namespace=Namespace(str(metadata.get("namespace", "default"))),
        name=str(metadata.get("name", "")),
        selector=label_selector_from_api(spec.get("selector")),
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        resource_version=str(metadata.get("resourceVersion", "")),
    )
