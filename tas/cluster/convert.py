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

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tas.cluster.model import (
    ContainerStatus,
    LabelSelector,
    NamespaceInfo,
    Node,
    NodeSelectorTerm,
    OwnerReference,
    PersistentVolumeClaim,
    PlacedPod,
    Pod,
    PodAffinityTerm,
    PodCondition,
    PodDisruptionBudget,
    PreferredSchedulingTerm,
    QoSClass,
    Requirement,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpreadConstraint,
    Volume,
    bind_time_of,
)
from tas.cluster.sharing import NoSharing, SharedValues
from tas.quantity import QuantityError, parse_quantity
from tas.types import Namespace, NodeName
from tas.vocabulary import NODE_ANNOTATIONS_READ, POD_ANNOTATIONS_READ

log = logging.getLogger(__name__)

Json = Mapping[str, Any]

_EMPTY_JSON: Json = {}

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
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def quantities(values: Any) -> dict[str, float]:
    result: dict[str, float] = {}
    for name, text in _dict(values).items():
        try:
            result[str(name)] = parse_quantity(text)
        except QuantityError:
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


def _annotations(value: Any, read: frozenset[str], shared: SharedValues) -> Mapping[str, str]:
    """The annotations of `value` a component reads (`read`), the others dropped."""
    if not isinstance(value, dict):
        return {}
    return shared.strings({k: v for k, v in value.items() if k in read})


def node_from_api(raw: Json, shared: SharedValues = NO_SHARING) -> Node:
    metadata, spec, status = _sections(raw)
    ready = any(
        _dict(c).get("type") == "Ready" and _dict(c).get("status") == "True"
        for c in _list(status.get("conditions"))
    )
    taints = (taint_from_api(_dict(t)) for t in _list(spec.get("taints")))
    return Node(
        name=NodeName(shared.value(str(metadata.get("name", "")))),
        labels=shared.strings(_dict(metadata.get("labels"))),
        annotations=_annotations(metadata.get("annotations"), NODE_ANNOTATIONS_READ, shared),
        taints=shared.value(tuple(t for t in taints if t is not None)),
        allocatable=shared.numbers(quantities(status.get("allocatable"))),
        unschedulable=bool(spec.get("unschedulable", False)),
        ready=ready,
        resource_version=str(metadata.get("resourceVersion", "")),
    )


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


def _container_requests(containers: Iterable[Any]) -> list[dict[str, float]]:
    return [quantities(_dict(_dict(c).get("resources")).get("requests")) for c in containers]


def pod_requests(spec: Json) -> dict[str, float]:
    """Effective requests as the scheduler counts them: sum of containers, max'd with each
    init container, plus the pod overhead."""
    total: dict[str, float] = {}
    for requests in _container_requests(_list(spec.get("containers"))):
        for name, value in requests.items():
            total[name] = total.get(name, 0.0) + value
    for requests in _container_requests(_list(spec.get("initContainers"))):
        for name, value in requests.items():
            total[name] = max(total.get(name, 0.0), value)
    for name, value in quantities(spec.get("overhead")).items():
        total[name] = total.get(name, 0.0) + value
    return total


def qos_class(spec: Json) -> QoSClass:
    """The QoS class the kubelet would assign, for pods whose status does not say."""
    containers = [*_list(spec.get("containers")), *_list(spec.get("initContainers"))]
    resources = [_dict(_dict(c).get("resources")) for c in containers]
    requests = [quantities(r.get("requests")) for r in resources]
    limits = [quantities(r.get("limits")) for r in resources]
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


def _node_affinity(spec: Json) -> tuple[NodeSelectorTerm, ...]:
    affinity = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
    required = _dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    return tuple(_selector_term(term) for term in _list(required.get("nodeSelectorTerms")))


def _preferred_node_affinity(spec: Json) -> tuple[PreferredSchedulingTerm, ...]:
    affinity = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
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


def _topology_spread(spec: Json) -> tuple[TopologySpreadConstraint, ...]:
    found = []
    for raw in _list(spec.get("topologySpreadConstraints")):
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


def _container_statuses(raw: Any, shared: SharedValues) -> tuple[ContainerStatus, ...]:
    statuses = []
    for item in _list(raw):
        s = _dict(item)
        state = _dict(s.get("state"))
        waiting = state.get("waiting")
        terminated = state.get("terminated")
        statuses.append(
            shared.value(
                ContainerStatus(
                    name=shared.value(str(s.get("name") or "")),
                    restart_count=_int(s.get("restartCount")),
                    waiting_reason=(
                        str(_dict(waiting).get("reason") or "") if waiting is not None else None
                    ),
                    terminated_reason=(
                        str(_dict(terminated).get("reason") or "")
                        if terminated is not None
                        else None
                    ),
                    exit_code=(
                        _int(_dict(terminated).get("exitCode")) if terminated is not None else None
                    ),
                )
            )
        )
    return shared.value(tuple(statuses))


def _conditions(raw: Any, shared: SharedValues) -> tuple[PodCondition, ...]:
    # Each pod's own: their transition times differ, so there is little to share.
    return tuple(
        PodCondition(
            type=shared.value(str(_dict(c).get("type") or "")),
            status=shared.value(str(_dict(c).get("status") or "")),
            reason=shared.value(str(_dict(c).get("reason") or "")),
            last_transition_time=parse_time(_dict(c).get("lastTransitionTime")),
        )
        for c in _list(raw)
    )


def _requested_resources(spec: Json) -> frozenset[str]:
    containers = [*_list(spec.get("containers")), *_list(spec.get("initContainers"))]
    return frozenset(
        str(name)
        for c in containers
        for name in _dict(_dict(_dict(c).get("resources")).get("requests"))
    )


def _anti_affinity(spec: Json) -> tuple[PodAffinityTerm, ...]:
    anti = _dict(_dict(spec.get("affinity")).get("podAntiAffinity"))
    return tuple(
        PodAffinityTerm(
            label_selector=label_selector_from_api(_dict(term).get("labelSelector")),
            topology_key=str(_dict(term).get("topologyKey", "")),
            namespaces=tuple(str(n) for n in _list(_dict(term).get("namespaces"))),
        )
        for term in _list(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))
    )


_VOLUME_KINDS = (
    "emptyDir",
    "hostPath",
    "persistentVolumeClaim",
    "configMap",
    "secret",
    "projected",
    "downwardAPI",
    "ephemeral",
)


def _volume(raw: Json) -> Volume:
    # Not shared: the service account token's volume has a name of its own in every pod.
    kind = next((k for k in _VOLUME_KINDS if k in raw), "other")
    claim = _dict(raw.get("persistentVolumeClaim")).get("claimName", "")
    return Volume(name=str(raw.get("name", "")), kind=kind, claim_name=str(claim))


def _restarts(statuses: Any) -> int:
    return sum(int(_dict(s).get("restartCount") or 0) for s in _list(statuses))


def _owners(metadata: Json, shared: SharedValues) -> tuple[OwnerReference, ...]:
    return shared.value(
        tuple(
            shared.value(
                OwnerReference(
                    kind=shared.value(str(_dict(o).get("kind", ""))),
                    name=shared.value(str(_dict(o).get("name", ""))),
                    uid=shared.value(str(_dict(o).get("uid", ""))),
                    controller=bool(_dict(o).get("controller", False)),
                )
            )
            for o in _list(metadata.get("ownerReferences"))
        )
    )


def _tolerations(spec: Json, shared: SharedValues) -> tuple[Toleration, ...]:
    return shared.value(
        tuple(
            Toleration(
                key=str(_dict(t).get("key") or ""),
                operator=str(_dict(t).get("operator") or "Equal"),
                value=str(_dict(t).get("value") or ""),
                effect=str(_dict(t).get("effect") or ""),
            )
            for t in _list(spec.get("tolerations"))
        )
    )


def _node_name(spec: Json, shared: SharedValues) -> NodeName | None:
    node_name = spec.get("nodeName")
    return NodeName(shared.value(str(node_name))) if node_name else None


def pod_from_api(raw: Json, shared: SharedValues = NO_SHARING) -> Pod:
    """Every field of the model (what the descheduler's plugins and evictor read)."""
    metadata, spec, status = _sections(raw)
    try:
        qos = QoSClass(status["qosClass"])
    except (KeyError, ValueError):
        qos = qos_class(spec)
    return Pod(
        namespace=Namespace(shared.value(str(metadata.get("namespace", "default")))),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        labels=shared.strings(_dict(metadata.get("labels"))),
        annotations=_annotations(metadata.get("annotations"), POD_ANNOTATIONS_READ, shared),
        node_name=_node_name(spec, shared),
        phase=shared.value(str(status.get("phase") or "Pending")),
        owners=_owners(metadata, shared),
        priority=int(spec.get("priority") or 0),
        priority_class_name=shared.value(str(spec.get("priorityClassName") or "")),
        qos_class=qos,
        requests=shared.numbers(pod_requests(spec)),
        node_selector=shared.strings(_dict(spec.get("nodeSelector"))),
        required_node_affinity=_node_affinity(spec),
        required_pod_anti_affinity=_anti_affinity(spec),
        tolerations=_tolerations(spec, shared),
        volumes=tuple(_volume(_dict(v)) for v in _list(spec.get("volumes"))),
        container_restarts=_restarts(status.get("containerStatuses")),
        init_container_restarts=_restarts(status.get("initContainerStatuses")),
        creation_timestamp=parse_time(metadata.get("creationTimestamp")),
        start_time=parse_time(status.get("startTime")),
        deletion_timestamp=parse_time(metadata.get("deletionTimestamp")),
        resource_version=str(metadata.get("resourceVersion", "")),
        container_images=shared.value(
            tuple(
                shared.value(str(_dict(c).get("image") or ""))
                for c in _list(spec.get("containers"))
            )
        ),
        container_statuses=_container_statuses(status.get("containerStatuses"), shared),
        init_container_statuses=_container_statuses(status.get("initContainerStatuses"), shared),
        ephemeral_container_statuses=_container_statuses(
            status.get("ephemeralContainerStatuses"), shared
        ),
        reason=str(status.get("reason") or ""),
        conditions=_conditions(status.get("conditions"), shared),
        preferred_node_affinity=_preferred_node_affinity(spec),
        topology_spread_constraints=_topology_spread(spec),
        has_priority=spec.get("priority") is not None,
        has_resource_claims=bool(_list(spec.get("resourceClaims"))),
        requested_resources=shared.value(_requested_resources(spec)),
    )


def placed_pod_from_api(raw: Json, shared: SharedValues = NO_SHARING) -> PlacedPod:
    """Only what placements (herd control, `tas.placements`) read: the extender's cache."""
    metadata, spec, status = _sections(raw)
    scheduled = [
        c for c in _list(status.get("conditions")) if _dict(c).get("type") == "PodScheduled"
    ]
    bound_at = bind_time_of(_conditions(scheduled, shared), parse_time(status.get("startTime")))
    return PlacedPod(
        namespace=Namespace(shared.value(str(metadata.get("namespace", "default")))),
        name=str(metadata.get("name", "")),
        node_name=_node_name(spec, shared),
        phase=shared.value(str(status.get("phase") or "Pending")),
        owners=_owners(metadata, shared),
        requests=shared.numbers(pod_requests(spec)),
        terminating=metadata.get("deletionTimestamp") is not None,
        bound_at=bound_at,
        resource_version=str(metadata.get("resourceVersion", "")),
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
