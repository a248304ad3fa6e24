"""Kubernetes objects as upstream's test tables build them, as the API serves them (JSON).

`node` and `pod` take upstream's `BuildTestNode` / `BuildTestPod` arguments (millicores, bytes,
pods) and keyword changes in place of its mutator functions, so a case reads like its upstream
row. Differences from upstream's fakes, none of which changes a verdict: pods are Running (a
real kubelet says so; upstream leaves the phase empty), have one container `c` with image
`img`, and were created an hour ago (upstream leaves the time zero).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

Json = dict[str, Any]

RS = "ReplicaSet"
RS_OWNER = [{"apiVersion": "apps/v1", "kind": RS, "name": "replicaset-1", "uid": ""}]
SS_OWNER = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "statefulset-1", "uid": ""}]
DS_OWNER = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "", "uid": ""}]
#: upstream's `SetNormalOwnerRef`: an owner of kind Pod without a name
POD_OWNER = [{"apiVersion": "v1", "kind": "Pod", "name": "", "uid": ""}]
MIRROR = {
    "kubernetes.io/created-by": '{"kind":"SerializedReference","apiVersion":"v1"}',
    "kubernetes.io/config.source": "api",
    "kubernetes.io/config.mirror": "mirror",
}
LOCAL_STORAGE = [{"name": "sample", "hostPath": {"path": "somePath"}, "emptyDir": {}}]
SYSTEM_CRITICAL = 2_000_000_000
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"


#: When the tables were written (imported). Their timestamps are ages from this instant; the
#: harness moves them to the instant a case runs (`as_of_now`), so a case collected long
#: before it runs (a slow suite) still meets pods of the ages its row gives them.
WRITTEN = datetime.now(UTC)
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def now() -> datetime:
    return datetime.now(UTC)


def ago(seconds: float) -> str:
    return (WRITTEN - timedelta(seconds=seconds)).strftime(TIMESTAMP)


def as_of_now(value: Any) -> Any:
    """A copy of `value` with every timestamp moved by the time since the tables were written."""
    if isinstance(value, dict):
        return {k: as_of_now(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_of_now(v) for v in value]
    if isinstance(value, str):
        try:
            written = datetime.strptime(value, TIMESTAMP).replace(tzinfo=UTC)
        except ValueError:
            return value
        return (written + (now() - WRITTEN)).strftime(TIMESTAMP)
    return value


def node(
    name: str,
    cpu: int = 2000,
    memory: int = 3000,
    pods: int = 10,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    ready: bool = True,
    extended: Mapping[str, int] | None = None,
) -> Json:
    allocatable = {"cpu": f"{cpu}m", "memory": str(memory), "pods": str(pods)}
    allocatable.update({k: str(v) for k, v in (extended or {}).items()})
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    found = {"key": key, "effect": effect}
    if value:
        found["value"] = value
    return found


def pod(
    name: str,
    cpu: int | None = 100,
    memory: int | None = 0,
    node_name: str = "",
    *,
    namespace: str = "default",
    owners: Sequence[Mapping[str, str]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    priority: int | None = None,
    phase: str = "Running",
    best_effort: bool = False,
    guaranteed: bool = False,
    extended: Mapping[str, int] | None = None,
    images: Sequence[str] = ("img",),
    volumes: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    spread: Sequence[Mapping[str, Any]] = (),
    created: str | None = None,
    started: str | None = None,
    deleting: bool = False,
    restarts: int = 0,
    init_restarts: int = 0,
    status: Mapping[str, Any] | None = None,
    resource_claims: bool = False,
) -> Json:
    """A pod as upstream's `BuildTestPod(name, cpu, memory, node, ...)` (cpu None: no request)."""
    requests: dict[str, str] = {}
    if not best_effort:
        if cpu is not None and cpu >= 0:
            requests["cpu"] = f"{cpu}m"
        if memory is not None and memory >= 0:
            requests["memory"] = str(memory)
        requests.update({k: str(v) for k, v in (extended or {}).items()})
    resources: dict[str, Any] = {"requests": requests}
    if guaranteed:
        resources["limits"] = dict(requests)
    containers = [
        {
            "name": "c" if i == 0 else f"c{i}",
            "image": image,
            "resources": resources if i == 0 else {},
        }
        for i, image in enumerate(images)
    ]
    spec: Json = {"containers": containers, "nodeName": node_name}
    if volumes:
        spec["volumes"] = [dict(v) for v in volumes]
    if priority is not None:
        spec["priority"] = priority
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = copy.deepcopy(dict(affinity))
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if spread:
        spec["topologySpreadConstraints"] = [copy.deepcopy(dict(s)) for s in spread]
    if resource_claims:
        spec["resourceClaims"] = [{"name": "claim", "resourceClaimName": "test-resource-claim"}]
    metadata: Json = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "ownerReferences": [dict(o) for o in owners],
        "creationTimestamp": created or ago(3600),
    }
    if deleting:
        metadata["deletionTimestamp"] = ago(1)
    state: Json = {"phase": phase}
    if started:
        state["startTime"] = started
    if restarts or init_restarts:
        state["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
        state["initContainerStatuses"] = [{"name": "i", "restartCount": init_restarts}]
    state.update(copy.deepcopy(dict(status or {})))
    return {"metadata": metadata, "spec": spec, "status": state}


def required_affinity(key: str, values: Sequence[str], operator: str = "In") -> Json:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": key, "operator": operator, "values": list(values)}
                        ]
                    }
                ]
            }
        }
    }


def anti_affinity(key: str, value: str, topology_key: str = "region") -> Json:
    """upstream's `SetPodAntiAffinity`."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [{"key": key, "operator": "In", "values": [value]}]
                    },
                    "topologyKey": topology_key,
                }
            ]
        }
    }


def pdb(name: str, app: str, namespace: str = "default", allowed: int = 1) -> Json:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": 1},
        "status": {"disruptionsAllowed": allowed},
    }


def pvc(name: str, storage_class: str, namespace: str = "default") -> Json:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"]},
    }


def namespace(name: str) -> Json:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}


def priority_class(name: str, value: int) -> Json:
    return {"metadata": {"name": name}, "value": value}


def node_metrics(name: str, cpu: int, memory: int) -> Json:
    return {
        "metadata": {"name": name},
        "window": "20s",
        "usage": {"cpu": f"{cpu}m", "memory": str(memory)},
    }


def pod_metrics(name: str, cpu: int, memory: int, namespace: str = "default") -> Json:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "window": "20s",
        "containers": [{"name": "container-1", "usage": {"cpu": f"{cpu}m", "memory": str(memory)}}],
    }


def pvc_volume(claim: str, name: str = "pvc") -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}
