"""DefaultEvictor rows (defaultevictor_test.go: TestDefaultEvictorPreEvictionFilter and
TestDefaultEvictorFilter). Upstream asks the evictor about the row's first pod; here PodLifeTime
(every pod is older than its limit) is pointed at that pod by a label, so the pod is evicted
exactly when upstream's Filter and PreEvictionFilter let it through."""

from __future__ import annotations

from typing import Any

from tests.descheduler.upstream.harness import Case, Json
from tests.descheduler.upstream.objects import (
    DS_OWNER,
    EVICT_ANNOTATION,
    LOCAL_STORAGE,
    MIRROR,
    POD_OWNER,
    RS_OWNER,
    SS_OWNER,
    SYSTEM_CRITICAL,
    ago,
    namespace,
    node,
    pdb,
    pod,
    pvc,
    pvc_volume,
    taint,
)

TARGET = {"upstream.test/target": "yes"}
SOFT_NO_EVICTION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
GPU = taint("hardware", "gpu")
EAST = {"datacenter": "east"}
LOW, HIGH = 800, 900


def n1() -> Json:
    return node("node1", 1000, 2000, 13)


def row(
    name: str,
    pods: list[Json],
    evicted: bool,
    *,
    nodes: list[Json] | None = None,
    evictor: dict[str, Any] | None = None,
    objects: list[tuple[str, Json]] | None = None,
) -> Case:
    first = pods[0]
    first["metadata"]["labels"] = {**first["metadata"]["labels"], **TARGET}
    return Case(
        name=name,
        plugin="PodLifeTime",
        args={"maxPodLifeTimeSeconds": 60, "labelSelector": {"matchLabels": TARGET}},
        evictor={"nodeFit": False, **(evictor or {})},
        nodes=[n1(), *(nodes or [])],
        pods=pods,
        objects=objects or [],
        evicted_pods=[first["metadata"]["name"]] if evicted else [],
        spare_node=not nodes,
    )


def p(name: str, **changes: Any) -> Json:
    return pod(name, 400, 0, "node1", **changes)


CASES: list[Case] = [
    # --- TestDefaultEvictorPreEvictionFilter
    row(
        "Pod with no tolerations running on normal node, all other nodes tainted",
        [p("p1", owners=POD_OWNER)],
        False,
        nodes=[
            node("node2", 1000, 2000, 13, taints=[GPU]),
            node("node3", 1000, 2000, 13, taints=[GPU]),
        ],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with correct tolerations running on normal node, all other nodes tainted",
        [
            p(
                "p1",
                owners=POD_OWNER,
                tolerations=[{"key": "hardware", "value": "gpu", "effect": "NoSchedule"}],
            )
        ],
        True,
        nodes=[
            node("node2", 1000, 2000, 13, taints=[GPU]),
            node("node3", 1000, 2000, 13, taints=[GPU]),
        ],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with incorrect node selector",
        [p("p1", owners=POD_OWNER, node_selector={"datacenter": "fail"})],
        False,
        nodes=[
            node("node2", 1000, 2000, 13, labels=EAST),
            node("node3", 1000, 2000, 13, labels=EAST),
        ],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with correct node selector",
        [p("p1", owners=POD_OWNER, node_selector=EAST)],
        True,
        nodes=[
            node("node2", 1000, 2000, 13, labels=EAST),
            node("node3", 1000, 2000, 13, labels=EAST),
        ],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with correct node selector, but only available node doesn't have enough CPU",
        [pod("p1", 12, 8, "node1", owners=POD_OWNER, node_selector=EAST)],
        False,
        nodes=[
            node("node2-TEST", 10, 16, 10, labels=EAST),
            node("node3-TEST", 10, 16, 10, labels=EAST),
        ],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with correct node selector, and one node has enough memory",
        [
            pod("p1", 12, 8, "node1", owners=POD_OWNER, node_selector=EAST),
            pod("node2-pod-10GB-mem", 20, 10, "node2", labels={"test": "true"}),
            pod("node3-pod-10GB-mem", 20, 10, "node3", labels={"test": "true"}),
        ],
        True,
        nodes=[node("node2", 100, 16, 10, labels=EAST), node("node3", 100, 20, 10, labels=EAST)],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with correct node selector, but both nodes don't have enough memory",
        [
            pod("p1", 12, 8, "node1", owners=POD_OWNER, node_selector=EAST),
            pod("node2-pod-10GB-mem", 10, 10, "node2", labels={"test": "true"}),
            pod("node3-pod-10GB-mem", 10, 10, "node3", labels={"test": "true"}),
        ],
        False,
        nodes=[node("node2", 100, 16, 10, labels=EAST), node("node3", 100, 16, 10, labels=EAST)],
        evictor={"nodeFit": True},
    ),
    row(
        "Pod with incorrect node selector, but nodefit false, should still be evicted",
        [p("p1", owners=POD_OWNER, node_selector={"datacenter": "fail"})],
        True,
        nodes=[
            node("node2", 1000, 2000, 13, labels=EAST),
            node("node3", 1000, 2000, 13, labels=EAST),
        ],
    ),
    row(
        "Pod with namespace matched namespace selector, should be evicted",
        [p("p1", namespace="test", owners=POD_OWNER, node_selector=EAST)],
        True,
        nodes=[
            node("node2", 1000, 2000, 13, labels=EAST),
            node("node3", 1000, 2000, 13, labels=EAST),
        ],
        evictor={
            "nodeFit": True,
            "namespaceLabelSelector": {"matchLabels": {"kubernetes.io/metadata.name": "test"}},
        },
        objects=[("namespaces", namespace("default")), ("namespaces", namespace("test"))],
    ),
    row(
        "Pod with namespace does not matched namespace selector, should not be evicted",
        [p("p1", owners=POD_OWNER, node_selector={"datacenter": "fail"})],
        False,
        nodes=[
            node("node2", 1000, 2000, 13, labels=EAST),
            node("node3", 1000, 2000, 13, labels=EAST),
        ],
        evictor={
            "nodeFit": True,
            "namespaceLabelSelector": {"matchLabels": {"kubernetes.io/metadata.name": "test"}},
        },
        objects=[("namespaces", namespace("default")), ("namespaces", namespace("test"))],
    ),
    # --- TestDefaultEvictorFilter
    row("Failed pod eviction with no ownerRefs", [p("bare_pod_failed", phase="Failed")], False),
    row(
        "Normal pod eviction with no ownerRefs and evictFailedBarePods enabled",
        [p("bare_pod")],
        False,
        evictor={"evictFailedBarePods": True},
    ),
    row(
        "Failed pod eviction with no ownerRefs (evictFailedBarePods)",
        [p("bare_pod_failed_but_can_be_evicted", phase="Failed")],
        True,
        evictor={"evictFailedBarePods": True},
    ),
    row("Normal pod eviction with normal ownerRefs", [p("p1", owners=POD_OWNER)], True),
    row(
        "Normal pod eviction with normal ownerRefs and the evict annotation",
        [p("p2", owners=POD_OWNER, annotations={EVICT_ANNOTATION: "true"})],
        True,
    ),
    row(
        "Normal pod eviction with normal ownerRefs and prefer-no-eviction (preference)",
        [p("p2", owners=POD_OWNER, annotations={SOFT_NO_EVICTION: ""})],
        True,
    ),
    row(
        "Normal pod eviction with normal ownerRefs and prefer-no-eviction (mandatory)",
        [p("p2", owners=POD_OWNER, annotations={SOFT_NO_EVICTION: ""})],
        False,
        evictor={"noEvictionPolicy": "Mandatory"},
    ),
    row(
        "Normal pod eviction with replicaSet ownerRefs and the evict annotation",
        [p("p4", owners=RS_OWNER, annotations={EVICT_ANNOTATION: "true"})],
        True,
    ),
    row(
        "Normal pod eviction with statefulSet ownerRefs and the evict annotation",
        [p("p19", owners=SS_OWNER, annotations={EVICT_ANNOTATION: "true"})],
        True,
    ),
    row(
        "Pod not evicted because it is bound to a PV and evictLocalStoragePods = false",
        [p("p5", owners=POD_OWNER, volumes=LOCAL_STORAGE)],
        False,
    ),
    row(
        "Pod is evicted because it is bound to a PV and evictLocalStoragePods = true",
        [p("p6", owners=POD_OWNER, volumes=LOCAL_STORAGE)],
        True,
        evictor={"evictLocalStoragePods": True},
    ),
    row(
        "Pod with local storage but the evict annotation is evicted",
        [p("p7", owners=POD_OWNER, volumes=LOCAL_STORAGE, annotations={EVICT_ANNOTATION: "true"})],
        True,
    ),
    row("Pod not evicted because it is part of a daemonSet", [p("p8", owners=DS_OWNER)], False),
    row(
        "Pod is evicted because it is part of a daemonSet, but it has the evict annotation",
        [p("p9", owners=DS_OWNER, annotations={EVICT_ANNOTATION: "true"})],
        True,
    ),
    row(
        "Pod not evicted because it is a mirror pod",
        [p("p10", owners=POD_OWNER, annotations=MIRROR)],
        False,
    ),
    row(
        "Pod is evicted because it is a mirror pod, but it has the evict annotation",
        [p("p11", owners=POD_OWNER, annotations={**MIRROR, EVICT_ANNOTATION: "true"})],
        True,
    ),
    row(
        "Pod not evicted because it has system critical priority",
        [p("p12", owners=POD_OWNER, priority=SYSTEM_CRITICAL)],
        False,
    ),
    row(
        "Pod is evicted because it has system critical priority, but it has the evict annotation",
        [
            p(
                "p13",
                owners=POD_OWNER,
                priority=SYSTEM_CRITICAL,
                annotations={EVICT_ANNOTATION: "true"},
            )
        ],
        True,
    ),
    row(
        "Pod not evicted because it has a priority higher than the configured priority threshold",
        [p("p14", owners=POD_OWNER, priority=HIGH)],
        False,
        evictor={"priorityThreshold": {"value": LOW}},
    ),
    row(
        "Pod above the priority threshold with the evict annotation is evicted",
        [p("p15", owners=POD_OWNER, priority=HIGH, annotations={EVICT_ANNOTATION: "true"})],
        True,
        evictor={"priorityThreshold": {"value": LOW}},
    ),
    row(
        "Pod is evicted because it has system critical priority, but evictSystemCriticalPods = "
        "true",
        [p("p16", owners=POD_OWNER, priority=SYSTEM_CRITICAL)],
        True,
        evictor={"evictSystemCriticalPods": True},
    ),
    row(
        "Pod above the priority threshold is evicted with evictSystemCriticalPods = true",
        [p("p17", owners=POD_OWNER, priority=HIGH)],
        True,
        evictor={"evictSystemCriticalPods": True, "priorityThreshold": {"value": LOW}},
    ),
    row(
        "minReplicas of 2, owner with 2 replicas, evicts",
        [
            pod("p1", 1, 1, "node1", owners=[{**POD_OWNER[0], "uid": "owner-uid"}]),
            pod("p2", 1, 1, "node1", owners=[{**POD_OWNER[0], "uid": "owner-uid"}]),
        ],
        True,
        evictor={"minReplicas": 2},
    ),
    row(
        "minReplicas of 3, owner with 2 replicas, no eviction",
        [
            pod("p1", 1, 1, "node1", owners=[{**POD_OWNER[0], "uid": "owner-uid"}]),
            pod("p2", 1, 1, "node1", owners=[{**POD_OWNER[0], "uid": "owner-uid"}]),
        ],
        False,
        evictor={"minReplicas": 3},
    ),
    row(
        "minReplicas of 2, multiple owners, no eviction",
        [
            pod("p1", 1, 1, "node1", owners=[{**POD_OWNER[0], "uid": "owner-uid"}, POD_OWNER[0]]),
            pod("p2", 1, 1, "node1", owners=POD_OWNER),
        ],
        True,
        evictor={"minReplicas": 2},
    ),
    row(
        "minPodAge of 50, pod created 10 minutes ago, no eviction",
        [pod("p1", 1, 1, "node1", owners=POD_OWNER, started=ago(600))],
        False,
        evictor={"minPodAge": "50m"},
    ),
    row(
        "minPodAge of 50, pod created 60 minutes ago, evicts",
        [pod("p1", 1, 1, "node1", owners=POD_OWNER, started=ago(3600))],
        True,
        evictor={"minPodAge": "50m"},
    ),
    row(
        "ignorePodsWithoutPDB, pod with no PDBs, no eviction",
        [pod("p1", 1, 1, "node1", owners=POD_OWNER, labels={"app": "foo"})],
        False,
        evictor={"ignorePodsWithoutPDB": True},
    ),
    row(
        "ignorePodsWithoutPDB, pod with PDBs, evicts",
        [pod("p1", 1, 1, "node1", owners=POD_OWNER, labels={"app": "foo"})],
        True,
        evictor={"ignorePodsWithoutPDB": True},
        objects=[("poddisruptionbudgets", pdb("pdb1", "foo"))],
    ),
    row(
        "ignorePvcPods is set, pod with PVC, not evicts",
        [p("p15", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        False,
        evictor={"ignorePvcPods": True},
    ),
    row(
        "ignorePvcPods is not set, pod with PVC, evicts",
        [p("p15", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        True,
    ),
    row(
        "Pod with local storage is evicted because PodsWithLocalStorage is in DefaultDisabled",
        [p("p18", owners=POD_OWNER, volumes=[{"name": "local-storage", "emptyDir": {}}])],
        True,
        evictor={"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}},
    ),
    row(
        "DaemonSet pod is evicted because DaemonSetPods is in DefaultDisabled",
        [
            p(
                "p19",
                owners=[{"kind": "DaemonSet", "name": "daemonset-test", "uid": "daemonset-uid"}],
            )
        ],
        True,
        evictor={"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
    ),
    row(
        "Pod with PVC is not evicted because PodsWithPVC is in ExtraEnabled",
        [p("p20", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        False,
        evictor={"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
    ),
    row(
        "Pod without PDB is not evicted because PodsWithoutPDB is in ExtraEnabled",
        [p("p21", owners=POD_OWNER)],
        False,
        evictor={"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}},
    ),
    row(
        "Pod with ResourceClaims is not evicted because PodsWithResourceClaims is in ExtraEnabled",
        [p("p20", owners=POD_OWNER, resource_claims=True)],
        False,
        evictor={"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
    ),
    row(
        "Pod using StorageClass is not evicted because PodsWithPVC is in ExtraEnabled",
        [p("p23", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        False,
        evictor={
            "podProtections": {
                "extraEnabled": ["PodsWithPVC"],
                "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "standard"}]}},
            }
        },
        objects=[("persistentvolumeclaims", pvc("foo", "standard"))],
    ),
    row(
        "Pod using unprotected StorageClass is evicted even though PodsWithPVC is in ExtraEnabled",
        [p("p24", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        True,
        evictor={
            "podProtections": {
                "extraEnabled": ["PodsWithPVC"],
                "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "protected"}]}},
            }
        },
        objects=[("persistentvolumeclaims", pvc("foo", "unprotected"))],
    ),
    row(
        "Pod using unexisting PVC is not evicted: its storage class is unknown",
        [p("p25", owners=POD_OWNER, volumes=[pvc_volume("foo")])],
        False,
        evictor={
            "podProtections": {
                "extraEnabled": ["PodsWithPVC"],
                "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "protected"}]}},
            }
        },
    ),
    row(
        "Pod using protected and unprotected StorageClasses is not evicted",
        [
            p(
                "p26",
                owners=POD_OWNER,
                volumes=[pvc_volume("protected", "protected-pvc"), pvc_volume("unprotected", "u")],
            )
        ],
        False,
        evictor={
            "podProtections": {
                "extraEnabled": ["PodsWithPVC"],
                "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "protected"}]}},
            }
        },
        objects=[
            ("persistentvolumeclaims", pvc("protected", "protected")),
            ("persistentvolumeclaims", pvc("unprotected", "unprotected")),
        ],
    ),
]
